// Ask a toolgate server whether tool calls may run, over gRPC.
//
//   node check_tool.js [ADDR]     (default: $TOOLGATE_ADDR, then 127.0.0.1:50051)
//
// It sends a few unary Check calls, then one short CheckStream session
// (session context, a transcript append, several checks), and prints every
// decision. The expected answers are those of toolgate's embedded default
// policy with no classifier, so the example doubles as a test: it exits 0
// when every answer is as expected, 1 when one is not, and 2 when the server
// could not be asked.
//
// The proto is loaded at run time from the repository's proto/ directory
// (TOOLGATE_PROTO_DIR overrides it); no generated code is involved.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

const here = path.dirname(fileURLToPath(import.meta.url));
const protoDir = process.env.TOOLGATE_PROTO_DIR ?? path.join(here, '..', '..', 'proto');
const TIMEOUT_MS = 10_000;

const definition = protoLoader.loadSync('toolgate/v1/permission.proto', {
  includeDirs: [protoDir],
  enums: String, // decisions as their names: 'DECISION_ALLOW'
  longs: String,
  defaults: true,
  oneofs: true, // a oneof's case in a virtual field: msg.result === 'error'
});
const { PermissionService } = grpc.loadPackageDefinition(definition).toolgate.v1;

// toStruct turns a plain object into a google.protobuf.Struct, the type of
// ToolCall.input; proto-loader does not convert it.
function toValue(v) {
  if (v === null) return { nullValue: 'NULL_VALUE' };
  if (Array.isArray(v)) return { listValue: { values: v.map(toValue) } };
  switch (typeof v) {
    case 'string': return { stringValue: v };
    case 'number': return { numberValue: v };
    case 'boolean': return { boolValue: v };
    case 'object': return { structValue: toStruct(v) };
    default: throw new TypeError(`cannot encode ${typeof v} in a Struct`);
  }
}

function toStruct(obj) {
  return { fields: Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, toValue(v)])) };
}

// attestation says where this client stands, for the server to compare
// with its own view: the kernel's boot id and the working directory's
// device and inode. A server that cannot match them proves nothing from its
// disk (edits, reads, searches are then not allowed by proofs about files).
// undefined when they cannot be read: the server then decides without.
function attestation(dir) {
  try {
    const bootId = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const st = fs.statSync(dir, { bigint: true });
    // The mount namespace and root place the whole view: without them,
    // the server counts only the working directory's files as this
    // client's.
    const ns = fs.statSync('/proc/self/ns/mnt', { bigint: true });
    const root = fs.statSync('/', { bigint: true });
    return {
      bootId,
      workingDirectoryDevice: st.dev.toString(),
      workingDirectoryInode: st.ino.toString(),
      mountNamespace: ns.ino.toString(),
      rootDevice: root.dev.toString(),
      rootInode: root.ino.toString(),
    };
  } catch {
    return undefined;
  }
}

function toolCall(name, input = {}) {
  return { name, input: toStruct(input) };
}

function describe(resp) {
  return `${resp.decision} (${resp.source}) ${resp.reason}`;
}

function deadline() {
  return new Date(Date.now() + TIMEOUT_MS);
}

// waitForReady: a server that is still starting is waited for, up to the
// deadline, instead of failing the call at once.
function waitForReady() {
  return new grpc.Metadata({ waitForReady: true });
}

function check(client, req) {
  return new Promise((resolve, reject) => {
    client.check(req, waitForReady(), { deadline: deadline() }, (err, resp) => (err ? reject(err) : resolve(resp)));
  });
}

async function unaryChecks(client, cwd) {
  const here = attestation(cwd);
  const cases = [
    ['read a file of the project', toolCall('Read', { file_path: path.join(cwd, 'README.md') }),
      'DECISION_ALLOW', 'DECISION_SOURCE_SAFE_TOOL'],
    // Attesting another directory than the server finds at the working
    // directory's path: nothing is proven from the disk, so the read is
    // asked about (no classifier is configured).
    ['read, attesting another dir', toolCall('Read', { file_path: path.join(cwd, 'README.md') }),
      'DECISION_ASK', 'DECISION_SOURCE_NO_CLASSIFIER', attestation('/')],
    ['wipe the disk', toolCall('Bash', { command: 'rm -rf /' }),
      'DECISION_DENY', 'DECISION_SOURCE_RULE'],
    ['read an SSH private key', toolCall('Read', { file_path: '/home/dev/.ssh/id_rsa' }),
      'DECISION_DENY', 'DECISION_SOURCE_RULE'],
  ];
  let failures = 0;
  for (const [what, tool, want, wantSource, attested] of cases) {
    const resp = await check(client, { tool, workingDirectory: cwd, sessionId: 'node-example', attestation: attested ?? here });
    console.log(`Check ${(what + ':').padEnd(28)} ${describe(resp)}`);
    if (resp.decision !== want || resp.source !== wantSource) {
      console.log(`  unexpected: want ${want} (${wantSource})`);
      failures++;
    }
  }
  return failures;
}

async function streamSession(client, cwd) {
  // requestId -> expected [decision, source], or a number: the gRPC code of
  // an expected CheckError.
  const expected = new Map([
    ['s1', ['DECISION_ALLOW', 'DECISION_SOURCE_SAFE_TOOL']],
    ['s2', ['DECISION_ALLOW', 'DECISION_SOURCE_ACCEPT_EDITS']],
    ['s3', ['DECISION_DENY', 'DECISION_SOURCE_RULE']],
    ['s4', grpc.status.INVALID_ARGUMENT], // no tool name
  ]);
  const readme = path.join(cwd, 'README.md');

  const answers = new Map();
  const stream = client.checkStream(waitForReady(), { deadline: deadline() });
  const ended = new Promise((resolve, reject) => {
    stream.on('data', (msg) => answers.set(msg.requestId, msg));
    stream.on('error', reject);
    stream.on('end', resolve);
  });
  // Checks leave working directory, mode and session id empty: the session
  // context supplies them.
  stream.write({ session: { sessionId: 'node-example-stream', workingDirectory: cwd, mode: 'PERMISSION_MODE_AUTO', attestation: attestation(cwd) } });
  stream.write({ transcript: { entries: [{ role: 'ROLE_USER', text: 'Fix the typo in the README.' }] } });
  stream.write({ check: { requestId: 's1', tool: toolCall('Read', { file_path: readme }) } });
  stream.write({ check: { requestId: 's2', tool: toolCall('Edit', { file_path: readme, old_string: 'teh', new_string: 'the' }) } });
  stream.write({ check: { requestId: 's3', tool: toolCall('Bash', { command: 'cat ~/.aws/credentials' }) } });
  stream.write({ check: { requestId: 's4', tool: { name: '' } } });
  // Closing our side is enough here: the server answers every check it
  // received before it ends the stream. A long-lived agent keeps the stream
  // open and writes a check whenever the agent wants to run a tool.
  stream.end();
  await ended;

  let failures = 0;
  for (const [id, want] of expected) {
    const msg = answers.get(id);
    answers.delete(id);
    if (msg === undefined) {
      console.log(`Stream ${id}: no answer`);
      failures++;
      continue;
    }
    let ok;
    if (msg.result === 'error') {
      console.log(`Stream ${id}: error ${msg.error.code} ${msg.error.message}`);
      ok = msg.error.code === want;
    } else {
      console.log(`Stream ${id}: ${describe(msg.response)}`);
      ok = Array.isArray(want) && msg.response.decision === want[0] && msg.response.source === want[1];
    }
    if (!ok) {
      console.log(`  unexpected: want ${JSON.stringify(want)}`);
      failures++;
    }
  }
  for (const [id, msg] of answers) {
    console.log(`Stream: unexpected message for ${JSON.stringify(id)}: ${JSON.stringify(msg)}`);
    failures++;
  }
  return failures;
}

async function main(argv) {
  if (argv.length > 1) {
    console.error('usage: node check_tool.js [ADDR]');
    return 2;
  }
  const addr = argv[0] ?? process.env.TOOLGATE_ADDR ?? '127.0.0.1:50051';
  const client = new PermissionService(addr, grpc.credentials.createInsecure());
  const cwd = process.cwd();
  let failures;
  try {
    failures = (await unaryChecks(client, cwd)) + (await streamSession(client, cwd));
  } catch (err) {
    // The server could not decide: a real agent fails closed here.
    console.error(`toolgate at ${addr} could not decide: ${err.code !== undefined ? grpc.status[err.code] : ''} ${err.details ?? err.message}`);
    return 2;
  } finally {
    client.close();
  }
  if (failures > 0) {
    console.error(`${failures} unexpected answer(s)`);
    return 1;
  }
  console.log('all answers as expected');
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
