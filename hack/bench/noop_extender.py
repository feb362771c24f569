"""A scheduler extender that decides nothing: the yardstick pumice is measured against.

filter returns every node it is given, prioritize scores them all 0, bind POSTs the Binding as asked.
Same stack as pumice (aiohttp, orjson, the same API client), so the difference is pumice's decisions.

    python hack/bench/noop_extender.py --kubeconfig KUBECONFIG --bind 127.0.0.1:PORT
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import orjson
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from controllers.kube.client import KubeClient
from controllers.kube.kubeconfig import load_config
from controllers.scheduling.executor import BindError
from controllers.scheduling.kube_executor import KubeExecutor


async def serve(kubeconfig: str, host: str, port: int) -> None:
    client = KubeClient(await load_config(kubeconfig))
    executor = KubeExecutor(client)

    async def filter_(request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        out = {
            "NodeNames": body.get("NodeNames"),
            "FailedNodes": {},
            "FailedAndUnresolvableNodes": {},
            "Error": "",
        }
        return web.Response(body=orjson.dumps(out), content_type="application/json")

    async def prioritize(request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        out = [{"Host": n, "Score": 0} for n in body.get("NodeNames") or []]
        return web.Response(body=orjson.dumps(out), content_type="application/json")

    async def bind(request: web.Request) -> web.Response:
        a = orjson.loads(await request.read())
        try:
            await executor.bind(a["PodNamespace"], a["PodName"], a["PodUID"], a["Node"])
            err = ""
        except BindError as e:
            err = str(e)
        return web.Response(body=orjson.dumps({"Error": err}), content_type="application/json")

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/filter", filter_)
    app.router.add_post("/prioritize", prioritize)
    app.router.add_post("/bind", bind)
    app.router.add_get("/readyz", healthz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
        await client.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--bind", default="127.0.0.1:8899")
    args = ap.parse_args()
    host, port = args.bind.rsplit(":", 1)
    asyncio.run(serve(args.kubeconfig, host, int(port)))


if __name__ == "__main__":
    main()
