// Starts the reference MCP server (@modelcontextprotocol/server-everything)
// in its Streamable HTTP mode, on 127.0.0.1 only and on a port the system
// picks, and prints {"port": N} on a line of its own once it listens.
//
// The package listens with `app.listen(process.env.PORT)`, on every
// interface; the tests talk to 127.0.0.1 only, so the listen call is given
// that host before the package's module runs.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || typeof args[0] === "string") {
    const port = Number(args[0]);
    const callback = args.find((a) => typeof a === "function");
    this.once("listening", () => console.log(JSON.stringify({ port: this.address().port })));
    return listen.call(this, port, "127.0.0.1", callback);
  }
  return listen.apply(this, args);
};
process.env.PORT = "0";
await import("@modelcontextprotocol/server-everything/dist/transports/streamableHttp.js");
