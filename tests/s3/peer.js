// The S3 peer of the tests (started by tests/blackbox/s3peer.py): s3rver on
// 127.0.0.1 with a port the kernel picks, objects in DIR, one bucket made at
// start, and one key pair that it checks SigV4 signatures against.
//
//   node peer.js DIR BUCKET ACCESS_KEY SECRET_KEY [PORT]
//
// Prints one line `{"port": N}` once it listens, and then each request it gets
// as `METHOD URL` on stderr (tests read what was asked of it); runs until
// SIGTERM. PORT (default 0: any free one) lets a test start it again where it
// was. Run with --openssl-legacy-provider on OpenSSL 3: s3rver's listing
// continuation tokens use DES.
'use strict';

const S3rver = require('@20minutes/s3rver');
const AWSAccount = require('@20minutes/s3rver/lib/models/account');

const [dir, bucket, accessKey, secretKey, port = '0'] = process.argv.slice(2);
if (!dir || !bucket || !accessKey || !secretKey) {
  console.error('usage: node peer.js DIR BUCKET ACCESS_KEY SECRET_KEY [PORT]');
  process.exit(2);
}
// Only this key pair is known: a request signed with another is refused.
AWSAccount.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
AWSAccount.DUMMY_ACCOUNT.createKeyPair(accessKey, secretKey);

const server = new S3rver({
  address: '127.0.0.1',
  port: Number(port),
  directory: dir,
  silent: true,
  vhostBuckets: false,
  configureBuckets: [{ name: bucket }],
});
server.run().then(({ port: p }) => {
  server.httpServer.on('request', (req) => process.stderr.write(`${req.method} ${req.url}\n`));
  process.stdout.write(JSON.stringify({ port: p }) + '\n');
}, (e) => {
  console.error('s3rver: ' + e.message);
  process.exit(1);
});
process.on('SIGTERM', () => server.close().finally(() => process.exit(0)));
