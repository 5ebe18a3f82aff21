#!/usr/bin/env python3
"""A WebSocket client (the `websockets` package) through Tapwire, which it reaches with
CONNECT as browsers do. Prints one JSON line: what it sent and received.

ws_client.py PROXY URI SCENARIO [--cafile PEM] [--no-compression]
Scenarios: text, binary, large, fragmented, ping, close, both, malformed, hold (sends one
message and sleeps, for a kill in the middle), many (N=200 messages)."""
import asyncio, json, os, ssl, sys
from websockets.asyncio.client import connect

async def main():
    proxy, uri, scenario = sys.argv[1:4]
    rest = sys.argv[4:]
    context = None
    if "--cafile" in rest:
        context = ssl.create_default_context(cafile=rest[rest.index("--cafile") + 1])
    compression = None if "--no-compression" in rest else "deflate"
    out = {"sent": [], "received": []}
    async with connect(uri, proxy=proxy, ssl=context, compression=compression, max_size=None,
                       open_timeout=10, close_timeout=5) as ws:
        async def exchange(message):
            await ws.send(message)
            answer = await ws.recv()
            out["sent"].append(len(message))
            out["received"].append(answer if isinstance(answer, str) and len(answer) < 200 else len(answer))
            return answer
        if scenario == "text":
            assert await exchange('{"hello":"world","n":1}') == '{"hello":"world","n":1}'
            assert await exchange("plain words") == "plain words"
        elif scenario == "binary":
            assert await exchange(bytes(range(256))) == bytes(range(256))
        elif scenario == "large":
            big = '{"blob":"' + "x" * (3 << 20) + '"}'
            assert await exchange(big) == big
        elif scenario == "fragmented":
            message = '{"parts":"' + "abc" * 100 + '"}'
            await ws.send([message[:50], message[50:120], message[120:]])
            assert await ws.recv() == message
            out["sent"].append(len(message))
        elif scenario == "ping":
            pong = await ws.ping(b"are-you-there")
            await asyncio.wait_for(pong, 5)
            await ws.ping()
            assert await exchange("after ping") == "after ping"
        elif scenario == "close":
            await ws.send("bye")
            try:
                await ws.recv()
            except Exception:
                pass
            out["closeCode"] = ws.close_code
            out["closeReason"] = ws.close_reason
        elif scenario == "both":
            received = []
            async def reader():
                async for m in ws:
                    received.append(m)
                    if len(received) == 40:
                        return
            task = asyncio.create_task(reader())
            for i in range(20):
                await ws.send(f'{{"up":{i}}}')
            await asyncio.wait_for(task, 10)
            out["received"] = len(received)
        elif scenario == "malformed":
            await ws.send("trigger")
            try:
                await asyncio.wait_for(ws.recv(), 5)
            except Exception as e:
                out["error"] = type(e).__name__
        elif scenario == "hold":
            assert await exchange('{"before":"kill"}') == '{"before":"kill"}'
            print(json.dumps(out), flush=True)
            await asyncio.sleep(30)
        elif scenario == "flood":
            # N messages sent without waiting while the origin (/push?n=N) pushes N: every
            # echo and every push must arrive.
            n = int(os.environ.get("N", "2000"))
            pad = "x" * int(os.environ.get("PAD", "200"))
            received = 0
            async def reader():
                nonlocal received
                async for m in ws:
                    received += 1
                    if received == 2 * n:
                        return
            task = asyncio.create_task(reader())
            for i in range(n):
                await ws.send(f'{{"flood":{i},"pad":"{pad}"}}')
            await asyncio.wait_for(task, 60)
            out["received"] = received
        elif scenario == "many":
            for i in range(int(os.environ.get("N", "200"))):
                await exchange(f'{{"i":{i}}}')
    print(json.dumps(out), flush=True)

asyncio.run(main())
