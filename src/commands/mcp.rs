//! `system1 mcp`: the stdio MCP server.

use crate::error::Result;
use crate::gateway::Gateway;
use crate::{logging, mcp};

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> Result<i32> {
    let gateway = Gateway::from_env();
    let g = &gateway.loaded.config.gateway;
    logging::init_server(&g.log_level, &g.log_file);
    Ok(mcp::serve(gateway))
}
