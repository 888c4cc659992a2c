// The benches' Node origin on 127.0.0.1 (prints its port): GET /big answers
// 256 MiB, anything else 1 KiB. With KEY CERT arguments it speaks HTTPS;
// with ORIGIN_CLOSE=1 it closes the connection after each small answer.
const fs = require("fs");
const secure = process.argv.length > 3;
const small = Buffer.alloc(1024, 120), chunk = Buffer.alloc(1 << 20, 120);
const close = process.env.ORIGIN_CLOSE === "1";
const handler = (req, res) => {
  if (req.url === "/big") {
    res.writeHead(200, {"Content-Length": 256 * chunk.length});
    let n = 0;
    const more = () => { while (n < 256) { n++; if (!res.write(chunk)) return res.once("drain", more); } res.end(); };
    more();
  } else {
    res.writeHead(200, close ? {"Content-Length": small.length, "Connection": "close"} : {"Content-Length": small.length});
    res.end(small);
  }
};
const srv = secure
  ? require("https").createServer({key: fs.readFileSync(process.argv[2]), cert: fs.readFileSync(process.argv[3])}, handler)
  : require("http").createServer(handler);
srv.keepAliveTimeout = 60000;
srv.listen(0, "127.0.0.1", () => console.log(srv.address().port));
