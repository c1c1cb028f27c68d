/**
 * An app that reports, over HTTP, what its sandbox's network lets it do: its /proc/net/tcp{,6},
 * TCP connects to given addresses, binds of given ports (kept open, answering `squatter`) and
 * name resolution. It attacks nothing by itself: the test chooses every target.
 */
export const NETNS_PROBE_SERVER =
  `
const http = require('node:http');
const net = require('node:net');
const dns = require('node:dns');
const fs = require('node:fs');
const squats = [];
function tryConnect(host, port) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (r) => { s.destroy(); resolve(r); };
    s.setTimeout(2500, () => done('timeout'));
    // Connected: what the other side says first, if anything within a second.
    s.once('connect', () => {
      setTimeout(() => done('connected'), 1000);
      s.once('data', (d) => done('connected:' + d.toString())).once('end', () => done('connected'));
    });
    s.once('error', (e) => done(e.code || String(e)));
  });
}
http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://x');
  const q = (k) => url.searchParams.get(k);
  const send = (v) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(v)); };
  if (url.pathname === '/ok') return res.end('ok');
  if (url.pathname === '/sockets') {
    const read = (f) => { try { return fs.readFileSync(f, 'utf8'); } catch (e) { return ''; } };
    return send({ tcp: read('/proc/net/tcp'), tcp6: read('/proc/net/tcp6'), port: Number(process.env.PORT) });
  }
  if (url.pathname === '/connect') return send({ result: await tryConnect(q('host'), Number(q('port'))) });
  if (url.pathname === '/bind') {
    const server = net.createServer((s) => s.end('squatter'));
    return server.once('error', (e) => send({ result: e.code })).listen(Number(q('port')), '0.0.0.0', ` +
  `() => { squats.push(server); send({ result: 'bound' }); });
  }
  if (url.pathname === '/resolve') return dns.lookup(q('name'), { family: 4 }, (err, ` +
  `address) => send(err ? { error: err.code } : { address }));
  if (url.pathname === '/dependency') { try { return send({ isNumber: require('is-number')(5) }); ` +
  `} catch (e) { return send({ error: e.code }); } }
  if (url.pathname === '/env') return send({ database: new URL(process.env.DATABASE_URI).host, redis: ` +
  `new URL(process.env.REDIS_URI).host });
  res.statusCode = 404;
  res.end();
}).listen(Number(process.env.PORT), '127.0.0.1');
`;
