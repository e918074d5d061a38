//! `system1 mcp`: the stdio MCP server.

use crate::error::Result;
use crate::gateway::Gateway;
use crate::{logging, mcp};

#[derive(clap::Args)]
#[command(after_help = "\
Example (what an MCP client runs; Claude Code registers it so):
  claude mcp add --scope user --transport stdio system1 -- ~/.system1-gateway/bin/system1 mcp")]
pub struct Args {}

pub fn run(_args: Args) -> Result<i32> {
    let gateway = Gateway::from_env();
    let g = &gateway.loaded.config.gateway;
    logging::init_server(&g.log_level, &g.log_file);
    Ok(mcp::serve(gateway))
}
