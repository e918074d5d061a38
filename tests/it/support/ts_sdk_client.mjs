// The official MCP TypeScript SDK client (@modelcontextprotocol/sdk, installed by scripts/test)
// driving `system1 mcp`: node ts_sdk_client.mjs <sdk node_modules> <system1 binary>.
//
// The server's own settings come in through the transport's `env` on top of the SDK's default
// environment (HOME, PATH, ...), which is all the SDK passes otherwise. Every tool schema is
// compiled by Ajv twice, as draft-07 (Ajv's default, strict) and as 2020-12; every call goes through
// Client.callTool, which checks structuredContent against the tool's outputSchema and throws on a
// mismatch, and each result is checked again against both compiled schemas. Prints one JSON summary
// line on stdout; any failure exits non-zero with the reason on stderr.

import { createRequire } from 'node:module';
import path from 'node:path';

const [modules, server] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'noop.js'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport, getDefaultEnvironment } = require('@modelcontextprotocol/sdk/client/stdio.js');
const Ajv = require('ajv').default;
const Ajv2020 = require('ajv/dist/2020').default;

const fail = (message) => {
  process.stderr.write(`${message}\n`);
  process.exit(1);
};

const env = { ...getDefaultEnvironment() };
for (const key of ['SYSTEM1_CONFIG', 'SYSTEM1_INSTALL_DIR']) {
  if (process.env[key]) env[key] = process.env[key];
}
const transport = new StdioClientTransport({ command: server, args: ['mcp'], env, stderr: 'ignore' });
// The SDK hands the negotiated version to a transport that asks for it; stdio does not, so ask here.
let protocol = null;
transport.setProtocolVersion = (version) => { protocol = version; };
const client = new Client({ name: 'system1-tests', version: '0' });
await client.connect(transport);

// Strict draft-07 (no unknown keywords, no dialect it does not know) and 2020-12.
const drafts = { 'draft-07': new Ajv({ strict: true, allErrors: true }), '2020-12': new Ajv2020({ strict: true, allErrors: true }) };
const { tools } = await client.listTools();
const validators = {};
for (const tool of tools) {
  validators[tool.name] = {};
  for (const [draft, ajv] of Object.entries(drafts)) {
    for (const key of ['inputSchema', 'outputSchema']) {
      try {
        const compiled = ajv.compile(tool[key]);
        if (key === 'outputSchema') validators[tool.name][draft] = compiled;
      } catch (e) {
        fail(`${tool.name} ${key} does not compile as ${draft}: ${e.message}`);
      }
    }
  }
}

const calls = [
  ['system1_decide', { question: 'Ship it?', options: ['ship', 'hold'] }],
  ['system1_decide', { question: 'Ship it?', wait_for_previous: true }],
  ['system1_decide', { question: 'Ship it?', min_confidence: 0.99 }],
  ['system1_decide', { question: '' }],
  ['system1_health', {}],
  ['system1_capabilities', {}],
  ['system1_health', { verbose: true }],
];
const results = [];
for (const [name, args] of calls) {
  let result;
  try {
    result = await client.callTool({ name, arguments: args });
  } catch (e) {
    fail(`${name} ${JSON.stringify(args)}: the SDK refused the result: ${e.message}`);
  }
  const structured = result.structuredContent;
  if (structured !== undefined) {
    for (const [draft, validate] of Object.entries(validators[name])) {
      if (!validate(structured)) fail(`${name}: structuredContent fails the ${draft} outputSchema: ${JSON.stringify(validate.errors)}`);
    }
    if (JSON.stringify(JSON.parse(result.content[0].text)) !== JSON.stringify(structured)) fail(`${name}: text and structuredContent differ`);
  }
  results.push({
    tool: name,
    isError: result.isError === true,
    status: structured ? (structured.status ?? null) : null,
    decision: structured ? (structured.decision ?? null) : null,
    text: structured ? null : result.content[0].text,
  });
}
await client.close();
process.stdout.write(JSON.stringify({
  protocol,
  server: `${client.getServerVersion().name} ${client.getServerVersion().version}`,
  tools: tools.map((t) => t.name),
  results,
}) + '\n');
