"""An httpx transport that sends over aiohttp: the clients of the judge path keep httpx's API (the openai SDK
takes an ``httpx.AsyncClient``) and pay aiohttp's CPU per request.

Every judge request the service makes crosses two HTTP clients (a library's SDK to the gateway, the gateway
to the judge) where a library's own loop crosses one. httpx's own transport (httpcore, h11 in pure Python)
costs about 1.5 ms of CPU per request on a loopback chat completion of a few kB; aiohttp's (C parser) about
0.35 ms (bench/judge_transport.py). With this transport the two hops together cost less than the one a
library makes with httpx.

- At most ``connections`` requests at once: aiohttp's connector holds the others until a connection is
  free, and a connection comes back however its request ends (answered, failed, timed out, cancelled).
- Keep-alive connections for the transport's life; the session is opened on the event loop of the first
  request and closed by ``aclose``.
- Timeouts from httpx's request extensions: ``pool`` (waiting for a connection), ``connect``, ``read``
  (between chunks of the answer).
- aiohttp's failures are raised as httpx's (``ConnectError``, ``ConnectTimeout``, ``ReadTimeout``,
  ``RemoteProtocolError``, ``ReadError``), which is what the SDKs and the gateway's retry policy read.
- The answer's body is read whole (judge answers are small JSON documents; the gateway serves no stream),
  already decompressed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

# Response headers that described the body as sent, not as handed on (read whole and decompressed).
_AS_SENT = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class AiohttpTransport(httpx.AsyncBaseTransport):
    def __init__(self, connections: int) -> None:
        self.connections = max(1, connections)
        self._session: Any = None  # aiohttp.ClientSession, opened on the first request's loop

    def _open(self) -> Any:
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=self.connections, limit_per_host=0, keepalive_timeout=60
                ),
                timeout=aiohttp.ClientTimeout(total=None),
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=True,
            )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        import aiohttp

        session = self._open()
        limits = request.extensions.get("timeout") or {}
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=limits.get("pool"),
            sock_connect=limits.get("connect"),
            sock_read=limits.get("read"),
        )
        body = await request.aread()
        try:
            async with session.request(
                request.method,
                str(request.url),
                headers=list(request.headers.multi_items()),
                data=body or None,
                timeout=timeout,
                allow_redirects=False,
            ) as resp:
                content = await resp.read()
                status, reason = resp.status, resp.reason or ""
                headers = [(k, v) for k, v in resp.headers.items() if k.lower() not in _AS_SENT]
        except aiohttp.ConnectionTimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc) or "connect timed out", request=request) from exc
        except TimeoutError as exc:  # aiohttp's read timeouts are TimeoutErrors too
            raise httpx.ReadTimeout(str(exc) or "read timed out", request=request) from exc
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
        except aiohttp.ClientOSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc
        except aiohttp.ClientError as exc:  # disconnected, malformed answer, payload errors
            raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__, request=request) from exc
        return httpx.Response(
            status_code=status,
            headers=headers,
            content=content,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason.encode("latin-1", "replace")},
        )

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()
            # aiohttp closes its transports on the next loop iterations; let them go before the loop does.
            await asyncio.sleep(0)
