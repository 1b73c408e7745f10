#!/usr/bin/env node
// xds_node_client: the same proxyless client as xds_cpp_client, built on
// @grpc/grpc-js-xds (an independent xDS implementation). The bootstrap comes
// from env GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG.
//
//   node xds_node_client.js --target xds:///echo.test [--interval-ms 100]
//                           [--deadline-ms 1000] [--count N]
//                           [--header NAME=VALUE]...
//
// One Echo.Call per interval, each carrying every --header as request
// metadata (what xDS header matchers see); one line per RPC on stdout:
//   ok <backend-name>
//   error <numeric-code> <message on one line>
'use strict';

const path = require('path');

// Resolve the pinned npm packages from the repository root's node_modules,
// whatever the working directory. NODE_PATH may point elsewhere.
const repoRoot = path.resolve(__dirname, '..', '..');
function load(name) {
  return require(require.resolve(name, { paths: [repoRoot] }));
}
const grpc = load('@grpc/grpc-js');
const grpcXds = load('@grpc/grpc-js-xds');
const protoLoader = load('@grpc/proto-loader');

function parseFlags(argv) {
  const flags = { target: '', intervalMs: 100, deadlineMs: 1000, count: 0, headers: [] };
  for (let i = 0; i < argv.length; i += 2) {
    const arg = argv[i];
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`missing value for ${arg}`);
    const asInt = () => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 0) throw new Error(`bad value for ${arg}: ${value}`);
      return n;
    };
    switch (arg) {
      case '--target': flags.target = value; break;
      case '--interval-ms': flags.intervalMs = asInt(); break;
      case '--deadline-ms': flags.deadlineMs = asInt(); break;
      case '--count': flags.count = asInt(); break;
      case '--header': {
        const eq = value.indexOf('=');
        const name = value.slice(0, eq);
        if (eq <= 0 || name !== name.toLowerCase()) throw new Error(`bad value for ${arg}: ${value}`);
        flags.headers.push([name, value.slice(eq + 1)]);
        break;
      }
      default: throw new Error(`unknown flag ${arg}`);
    }
  }
  if (!flags.target) throw new Error('--target is required');
  return flags;
}

function oneLine(text) {
  return String(text).replace(/[\r\n]+/g, ' ');
}

function main() {
  let flags;
  try {
    flags = parseFlags(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`xds_node_client: ${e.message}\n`);
    process.exit(2);
  }
  grpcXds.register();

  const protoPath = path.join(repoRoot, 'proto', 'holdfast', 'test', 'echo.proto');
  const definition = protoLoader.loadSync(protoPath, { keepCase: true });
  const Echo = grpc.loadPackageDefinition(definition).holdfast.test.Echo;
  const client = new Echo(flags.target, grpc.credentials.createInsecure());

  let n = 0;
  const callOnce = () => {
    const deadline = new Date(Date.now() + flags.deadlineMs);
    const metadata = new grpc.Metadata();
    for (const [name, value] of flags.headers) metadata.add(name, value);
    client.Call({ message: `rpc ${n}` }, metadata, { deadline }, (err, reply) => {
      const line = err ? `error ${err.code} ${oneLine(err.details || err.message)}`
                       : `ok ${reply.backend}`;
      // process.stdout.write to a pipe is asynchronous in Node; the callback
      // order keeps lines whole and in order.
      process.stdout.write(line + '\n');
      n += 1;
      if (flags.count !== 0 && n >= flags.count) {
        client.close();
        return;
      }
      setTimeout(callOnce, flags.intervalMs);
    });
  };
  callOnce();
}

main();
