#!/usr/bin/env python3
"""A loopback WebSocket origin (the `websockets` package) for Tapwire's end-to-end tests.
Prints its port, then serves until stdin closes. Only ever binds 127.0.0.1.

ws_origin.py [--tls CERT KEY] [--no-compression]
Paths: /echo echoes every message as it came (text or binary); /close?code=N&reason=R
closes with that code after the first message; /malformed answers the first message
with a frame of reserved opcode 0x3; /push?n=N sends N text messages while it echoes,
so both directions run at once; /fragments echoes each message split in 3 fragments."""
import asyncio, ssl, sys, threading, urllib.parse
from websockets.asyncio.server import serve

async def handler(ws):
    url = urllib.parse.urlsplit(ws.request.path)
    q = dict(urllib.parse.parse_qsl(url.query))
    path = url.path
    if path == "/close":
        await ws.recv()
        await ws.close(int(q.get("code", "1000")), q.get("reason", ""))
        return
    if path == "/malformed":
        await ws.recv()
        ws.transport.write(b"\x83\x00")  # FIN + reserved opcode 3, no mask: a protocol error
        await asyncio.sleep(0.5)
        ws.transport.close()
        return
    pusher = None
    if path == "/push":
        async def push():
            for i in range(int(q.get("n", "10"))):
                await ws.send(f'{{"push":{i}}}')
        pusher = asyncio.create_task(push())
    async for message in ws:
        if path == "/fragments":
            third = max(1, len(message) // 3)
            await ws.send([message[:third], message[third:2 * third], message[2 * third:]])
        else:
            await ws.send(message)
    if pusher:
        await pusher

async def main():
    args = sys.argv[1:]
    context = None
    if "--tls" in args:
        i = args.index("--tls")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args[i + 1], args[i + 2])
        del args[i:i + 3]
    compression = None if "--no-compression" in args else "deflate"
    stop = asyncio.get_running_loop().create_future()
    loop = asyncio.get_running_loop()
    threading.Thread(target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(stop.set_result, None)),
                     daemon=True).start()
    async with serve(handler, "127.0.0.1", 0, ssl=context, compression=compression, max_size=None) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await stop

asyncio.run(main())
