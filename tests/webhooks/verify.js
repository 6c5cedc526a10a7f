// Verifies one delivery with the Standard Webhooks reference library: reads
// {secret, headers, body} as JSON on stdin; prints the verified payload's
// type, exits 1 when the library refuses it.
const { Webhook } = require("standardwebhooks");
let input = "";
process.stdin.on("data", (c) => (input += c));
process.stdin.on("end", () => {
  const { secret, headers, body } = JSON.parse(input);
  try {
    const wh = new Webhook(secret);
    const out = wh.verify(body, headers);
    process.stdout.write(JSON.stringify({ ok: true, type: out.type }));
  } catch (e) {
    process.stdout.write(JSON.stringify({ ok: false, error: String(e) }));
    process.exit(1);
  }
});
