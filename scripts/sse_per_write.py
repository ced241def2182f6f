"""A minimal HTTP/1.1 server that answers every POST with a server-sent event stream read from a
file, writing each event separately (one send per event, TCP_NODELAY) as a server that streams
tokens as they are generated does. Used by scripts/bench_client.sh as an independent server-bound
peer; not part of ttftbench.

Usage: python3 sse_per_write.py BODY_FILE PORT
"""
import asyncio
import sys


def main():
    body = open(sys.argv[1], "rb").read()
    port = int(sys.argv[2])
    events = [e + b"\n\n" for e in body.split(b"\n\n") if e.strip()]
    chunks = [b"%x\r\n%s\r\n" % (len(e), e) for e in events]
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")

    async def handle(reader, writer):
        try:
            while True:
                req = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in req.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if length:
                    await reader.readexactly(length)
                writer.write(head)
                for c in chunks:
                    writer.write(c)
                    # Yield so each event leaves in its own send, as a generating server's would.
                    await asyncio.sleep(0)
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def serve():
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096)
        print(f"listening on 127.0.0.1:{port}", flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
