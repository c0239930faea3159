/**
 * git's proxy command for a git:// fetch (core.gitProxy): git runs it as
 * `<command> <host> <port>` and speaks its protocol over the command's
 * standard input and output. It connects to the address the source policy
 * checked (OPTMARK_GIT_PIN: "host port address"), without looking the host
 * up again: a name that answers with a public address to the check and a
 * private one to git's own lookup (DNS rebinding) cannot send the fetch
 * inside the network. Any other host or port is refused.
 *
 * The https:// and http:// fetches get the same pin from curl
 * (http.curloptResolve); git has no such setting for its own protocol.
 */
import { connect } from 'node:net';

const [host, port] = process.argv.slice(2);
const [pinnedHost, pinnedPort, address] = (process.env.OPTMARK_GIT_PIN ?? '').split(' ');

if (!host || !address || host !== pinnedHost || port !== pinnedPort) {
  process.stderr.write(`optmark: this fetch may reach only ${pinnedHost || 'the host'} at the address checked, not ${host}:${port}\n`);
  process.exit(1);
}

const socket = connect({ host: address, port: Number(port) });
socket.on('error', (error) => {
  process.stderr.write(`optmark: cannot reach ${host} at ${address}: ${error.message}\n`);
  process.exit(1);
});
process.stdin.pipe(socket);
socket.pipe(process.stdout);
socket.on('close', () => process.exit(0));
