"""The client scenario suite (test/client/scenarios.json) for the Python client, sync and asyncio, against a real
`execgate serve`. test/client/python-client.test.ts starts the servers and runs this with the environment below;
run by hand the same way (docs/clients.md). Every scenario name is a test method: test_<scenario> (sync) and
test_<scenario>_async."""
import asyncio
import base64
import hashlib
import os
import tempfile
import threading
import time
import unittest

from execgate import (
    AsyncExecgateClient, Cancel, ExecgateClient, ExecgateError, OutputEvent, ResultEvent, RetryPolicy, RichOutputEvent, TransitionEvent,
)


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(
            f"{name} is not set: run these tests through `npx jest test/client/python-client.test.ts` (it starts execgate serve)")
    return value


URL, KEY = env("EXECGATE_URL"), env("EXECGATE_API_KEY")
METERED_KEY, DRAINING_URL = env("EXECGATE_METERED_KEY"), env("EXECGATE_DRAINING_URL")
METERED_RATE = int(env("EXECGATE_METERED_RATE"))
BUSY = "const started = Date.now(); while (Date.now() - started < {ms}) {{}}; 'done'"
PLAN = {
    "goal": "the average order value",
    "steps": [
        {"id": "orders", "language": "python", "code": "[120.5, 80.0, 42.25, 310.0]"},
        {
            "id": "average", "language": "javascript", "dependsOn": ["orders"],
            "code": 'const o = JSON.parse(await read_file("steps/orders/value.json")); o.reduce((a, b) => a + b, 0) / o.length'},
    ],
}


def drain_metered() -> ExecgateError:
    """Spends tenant `metered`'s requests a minute without retrying, until the server answers 429."""
    impatient = ExecgateClient(URL, METERED_KEY, retry=RetryPolicy(max_attempts=1))
    for _ in range(METERED_RATE + 1):
        try:
            impatient.languages()
        except ExecgateError as error:
            return error
    raise AssertionError("the rate limit never answered 429")


class SyncScenarios(unittest.TestCase):
    def setUp(self) -> None:
        self.client = ExecgateClient(URL, KEY)

    def test_execute(self) -> None:
        result = self.client.execute({"language": "javascript", "code": "6 * 7"})
        self.assertEqual((result.status, result.value, result.adapter), ("ok", 42, "quickjs"))
        self.assertTrue(result.run_id)
        self.assertEqual(self.client.execute({"language": "python", "code": "sum([1, 2, 3])"}).value, 6)

    def test_execute_error(self) -> None:
        raised = self.client.execute({"language": "python", "code": "1 / 0"})
        self.assertEqual((raised.status, raised.error.type), ("error", "ZeroDivisionError"))
        invalid = self.client.execute({"language": "cobol", "code": "1"})
        self.assertEqual((invalid.status, invalid.error.code), ("invalid_request", "EXECGATE_REQUEST_INVALID"))

    def test_stream(self) -> None:
        events = list(self.client.stream({
            "language": "javascript", "code": 'console.log("one"); display({ n: 1 }); console.log("two"); 3'}))
        self.assertIsInstance(events[-1], ResultEvent)
        self.assertEqual((events[-1].result.status, events[-1].result.value), ("ok", 3))
        self.assertEqual("".join(event.chunk for event in events[:-1] if isinstance(event, OutputEvent)), "one\ntwo\n")
        rich = [event for event in events if isinstance(event, RichOutputEvent)]
        self.assertEqual([(event.index, event.output["kind"], event.output["data"]) for event in rich], [(0, "json", {"n": 1})])
        self.assertEqual(events[-1].result.outputs, [rich[0].output])
        chunks = []
        result = self.client.execute(
            {"language": "javascript", "code": 'console.log("hi"); 1'}, on_output=lambda _stream, chunk: chunks.append(chunk))
        self.assertEqual((result.status, "".join(chunks)), ("ok", "hi\n"))

    def test_task(self) -> None:
        task = self.client.tasks.submit(
            {"request": {"language": "javascript", "code": "21 * 2"}, "intentId": "python-scenario"},
            idempotency_key=f"py-{time.time()}")
        self.assertEqual(task["state"], "PENDING")
        states = [event.event["to"] for event in self.client.tasks.events(task["id"]) if isinstance(event, TransitionEvent)]
        self.assertTrue({"PENDING", "RUNNING", "COMPLETED"} <= set(states), states)
        done = self.client.tasks.wait(task["id"])
        self.assertEqual((done["state"], done["result"]["value"]), ("COMPLETED", 42))
        self.assertIn(task["id"], [item["id"] for item in self.client.tasks.list(intent_id="python-scenario")["tasks"]])
        self.assertIsNone(self.client.tasks.get("no-such-task"))

    def test_plan(self) -> None:
        plan = self.client.plans.run(PLAN)
        self.assertEqual(plan["state"], "RUNNING")
        events = list(self.client.plans.events(plan["id"]))
        self.assertEqual((events[-1]["type"], events[-1]["to"]), ("plan", "COMPLETED"))
        done = self.client.plans.wait(plan["id"])
        average = next(step for step in done["steps"] if step["id"] == "average")
        self.assertEqual((done["state"], average["result"]["value"]), ("COMPLETED", 138.1875))
        receipt = self.client.ledger.plan_receipt(plan["id"])
        self.assertIn(plan["id"], base64.b64decode(receipt["payload"]).decode())
        self.assertEqual(receipt["signatures"][0]["keyid"], self.client.ledger.public_key()["keyid"])

    def test_sandbox(self) -> None:
        with self.client.sandboxes.start(adapter="shell") as sandbox:
            self.assertEqual((sandbox.info["adapter"], sandbox.info["tenant"]), ("shell", "acme"))
            sandbox.write_file("data/in.csv", "a,b\n1,2\n")
            result = sandbox.exec("cat data/in.csv | wc -l > count.txt && cat count.txt")
            self.assertEqual((result.status, result.stdout.strip()), ("ok", "2"))
            self.assertEqual(sandbox.read_text("count.txt").strip(), "2")
            self.assertEqual(sorted(file["path"] for file in sandbox.list_files()), ["count.txt", "data/in.csv"])
            chunks = []
            self.assertEqual(sandbox.exec({"command": "echo streamed"}, on_output=lambda _s, chunk: chunks.append(chunk)).status, "ok")
            self.assertEqual("".join(chunks), "streamed\n")
            self.assertTrue(sandbox.delete_file("count.txt"))
            self.assertFalse(sandbox.delete_file("count.txt"))
            self.assertIn(sandbox.id, [info["id"] for info in self.client.sandboxes.list()])
        self.assertIsNone(self.client.sandboxes.get(sandbox.id))
        gone = sandbox.exec("echo gone")
        self.assertEqual((gone.status, gone.error.code), ("invalid_request", "EXECGATE_NOT_FOUND"))

    def test_ledger(self) -> None:
        with self.client.sandboxes.start(adapter="shell") as sandbox:
            sandbox.exec('mkdir -p out && echo "total 42" > out/summary.txt')
            saved = sandbox.save_artifact("out/summary.txt")
            self.assertEqual((saved["path"], saved["size"], saved["mediaType"]), ("out/summary.txt", 9, "text/plain"))
            self.assertEqual(self.client.files.text(saved["sha256"]), "total 42\n")
            activities = self.client.ledger.lineage(saved["sha256"])["ancestors"]["activities"]
            self.assertEqual([(item["kind"], item["sandboxId"]) for item in activities], [("sandbox_file", sandbox.id)])
            snapshot = sandbox.snapshot()
            self.assertEqual((snapshot["sandboxId"], snapshot["reason"], len(snapshot["id"])), (sandbox.id, "requested", 64))
            with self.client.sandboxes.start(adapter="shell", **{"from": snapshot["id"]}) as restored:
                self.assertEqual(restored.read_text("out/summary.txt"), "total 42\n")
        run = self.client.execute({"language": "javascript", "code": "2 + 2"})
        self.assertIsInstance(self.client.ledger.record(run.run_id)["seq"], int)
        self.assertIn(run.run_id, str(self.client.ledger.provenance(run.run_id)))
        self.assertTrue(self.client.ledger.verify()["ok"])
        self.assertIsInstance(self.client.ledger.export("openlineage", limit=5), list)
        receipt = self.client.ledger.receipt(run.run_id)
        self.assertEqual(receipt["payloadType"], "application/vnd.in-toto+json")
        self.assertEqual(receipt["signatures"][0]["keyid"], self.client.ledger.public_key()["keyid"])

    def test_uploads(self) -> None:
        csv = f"region,amount\nnorth,{time.time_ns() % 1000}\nsouth,5\nwest,7\n".encode()
        first = self.client.uploads.put(csv)
        self.assertEqual((first["bytes"], first["reused"], first["sha256"]), (len(csv), False, hashlib.sha256(csv).hexdigest()))
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "sales.csv")
            with open(path, "wb") as file:
                file.write(csv)
            again = self.client.uploads.put(path)  # a path: hashed from disk, then only asked about
            self.assertEqual((again["sha256"], again["reused"]), (first["sha256"], True))
            with open(path, "ab") as file:
                file.write(b"east,1\n")
            grown = self.client.uploads.put(path)  # new bytes: streamed from the file
            self.assertEqual((grown["reused"], grown["bytes"]), (False, len(csv) + 7))
        code = '(await read_file("data/sales.csv")).trim().split("\\n").length - 1'
        result = self.client.execute({
            "language": "javascript", "code": code, "files": [self.client.uploads.reference("data/sales.csv", grown)]})
        self.assertEqual((result.status, result.value), ("ok", 4))
        self.assertIn(first["sha256"], [item["sha256"] for item in self.client.uploads.list()["files"]])
        self.assertEqual(self.client.uploads.get(first["sha256"])["bytes"], len(csv))
        with self.assertRaises(ExecgateError) as caught:
            self.client.uploads.put(b"other bytes", sha256="f" * 64)
        self.assertEqual(caught.exception.code, "EXECGATE_FILE_DIGEST_MISMATCH")
        for digest in (first["sha256"], grown["sha256"]):
            self.assertTrue(self.client.uploads.delete(digest))
            self.assertFalse(self.client.uploads.delete(digest))
        self.assertIsNone(self.client.uploads.get(first["sha256"]))
        gone = self.client.execute({"language": "javascript", "code": "1", "files": [{"path": "a.csv", "sha256": first["sha256"]}]})
        self.assertEqual((gone.status, gone.error.code), ("invalid_request", "EXECGATE_FILE_NOT_FOUND"))

    def test_errors_by_code(self) -> None:
        stranger = ExecgateClient(URL, "not-a-key-0123456789")
        refused = stranger.execute({"language": "javascript", "code": "1"})
        self.assertEqual((refused.status, refused.error.code), ("invalid_request", "EXECGATE_UNAUTHORIZED"))
        with self.assertRaises(ExecgateError) as caught:
            stranger.tasks.list()
        self.assertEqual(
            (caught.exception.code, caught.exception.status, caught.exception.retryable), ("EXECGATE_UNAUTHORIZED", 401, False))
        with self.assertRaises(ExecgateError) as missing:
            self.client.tasks.cancel("no-such-task")
        self.assertEqual((missing.exception.code, missing.exception.status), ("EXECGATE_NOT_FOUND", 404))
        self.assertIn("no-such-task", str(missing.exception))
        nowhere = ExecgateClient("http://127.0.0.1:9", retry=RetryPolicy(max_attempts=1))
        self.assertEqual(nowhere.execute({"language": "javascript", "code": "1"}).error.code, "EXECGATE_SERVER_UNREACHABLE")
        with self.assertRaises(ExecgateError) as unreachable:
            nowhere.languages()
        self.assertEqual(
            (unreachable.exception.code, unreachable.exception.status, unreachable.exception.retryable),
            ("EXECGATE_SERVER_UNREACHABLE", 0, True))

    def test_retry_429(self) -> None:
        refused = drain_metered()
        self.assertEqual((refused.code, refused.status, refused.attempts, refused.retryable), ("EXECGATE_RATE_LIMITED", 429, 1, True))
        self.assertGreater(refused.retry_after, 0)
        # The default budget waits out Retry-After, and the run goes through.
        started = time.monotonic()
        result = ExecgateClient(URL, METERED_KEY).execute({"language": "javascript", "code": "40 + 2"})
        self.assertEqual((result.status, result.value), ("ok", 42))
        self.assertGreaterEqual(time.monotonic() - started, refused.retry_after * 0.5)

    def test_retry_503(self) -> None:
        drained = ExecgateClient(DRAINING_URL, KEY, retry=RetryPolicy(max_attempts=3, fallback_delay=0.05))
        result = drained.execute({"language": "javascript", "code": "1"})
        self.assertEqual((result.status, result.error.code), ("unavailable", "EXECGATE_SHUTTING_DOWN"))
        with self.assertRaises(ExecgateError) as caught:
            drained.tasks.submit({"request": {"language": "javascript", "code": "1"}})
        self.assertEqual((caught.exception.code, caught.exception.status, caught.exception.attempts), ("EXECGATE_SHUTTING_DOWN", 503, 3))

    def test_retry_budget(self) -> None:
        drain_metered()
        hurried = ExecgateClient(URL, METERED_KEY, retry=RetryPolicy(budget=0.1))
        with self.assertRaises(ExecgateError) as caught:
            hurried.languages()
        self.assertEqual((caught.exception.code, caught.exception.attempts), ("EXECGATE_RATE_LIMITED", 1))

    def test_cancel(self) -> None:
        token = Cancel()
        threading.Timer(0.2, token.cancel, args=("the caller hung up",)).start()
        result = self.client.execute({"language": "javascript", "code": BUSY.format(ms=3000), "timeoutMs": 5000}, cancel=token)
        self.assertEqual((result.status, result.error.code), ("cancelled", "EXECGATE_REQUEST_CANCELLED"))
        self.assertIn("the caller hung up", result.message)
        # Cancelling during a retry's wait ends the call without waiting it out.
        waiting = Cancel()
        drained = ExecgateClient(DRAINING_URL, KEY, retry=RetryPolicy(fallback_delay=60, budget=600))
        threading.Timer(0.1, waiting.cancel).start()
        started = time.monotonic()
        with self.assertRaises(ExecgateError) as caught:
            drained.tasks.submit({"request": {"language": "javascript", "code": "1"}}, cancel=waiting)
        self.assertEqual((caught.exception.code, caught.exception.attempts), ("EXECGATE_REQUEST_CANCELLED", 1))
        self.assertLess(time.monotonic() - started, 30)


class AsyncScenarios(unittest.IsolatedAsyncioTestCase):
    """The same scenarios through AsyncExecgateClient."""

    def setUp(self) -> None:
        self.client = AsyncExecgateClient(URL, KEY)

    async def test_execute_async(self) -> None:
        results = await asyncio.gather(*(self.client.execute({"language": "javascript", "code": f"{n} * 2"}) for n in range(4)))
        self.assertEqual([result.value for result in results], [0, 2, 4, 6])

    async def test_execute_error_async(self) -> None:
        raised = await self.client.execute({"language": "python", "code": "1 / 0"})
        self.assertEqual((raised.status, raised.error.type), ("error", "ZeroDivisionError"))

    async def test_stream_async(self) -> None:
        events = [event async for event in self.client.stream({"language": "javascript", "code": 'console.log("one"); 3'})]
        self.assertEqual((events[0].chunk, events[-1].result.value), ("one\n", 3))

    async def test_task_async(self) -> None:
        task = await self.client.tasks.submit({"request": {"language": "python", "code": "6 * 7"}})
        states = [event.event["to"] async for event in self.client.tasks.events(task["id"]) if isinstance(event, TransitionEvent)]
        self.assertEqual(states[-1], "COMPLETED")
        self.assertEqual((await self.client.tasks.wait(task["id"]))["result"]["value"], 42)

    async def test_plan_async(self) -> None:
        plan = await self.client.plans.run(PLAN)
        done = await self.client.plans.wait(plan["id"])
        self.assertEqual(done["state"], "COMPLETED")

    async def test_sandbox_async(self) -> None:
        async with await self.client.sandboxes.start(adapter="shell") as sandbox:
            await sandbox.write_file("n.txt", "41")
            result = await sandbox.exec("echo $(( $(cat n.txt) + 1 ))")
            self.assertEqual(result.stdout, "42\n")

    async def test_ledger_async(self) -> None:
        run = await self.client.execute({"language": "javascript", "code": "1 + 1"})
        self.assertEqual((await self.client.ledger.receipt(run.run_id))["payloadType"], "application/vnd.in-toto+json")

    async def test_uploads_async(self) -> None:
        data = f"n\n{time.time_ns()}\n".encode()
        uploaded = await self.client.uploads.put(data)
        self.assertFalse(uploaded["reused"])
        self.assertTrue((await self.client.uploads.put(data))["reused"])
        result = await self.client.execute({
            "language": "javascript", "code": '(await read_file("n.csv")).split("\\n")[0]',
            "files": [{"path": "n.csv", "sha256": uploaded["sha256"]}]})
        self.assertEqual((result.status, result.value), ("ok", "n"))
        self.assertTrue(await self.client.uploads.delete(uploaded["sha256"]))

    async def test_errors_by_code_async(self) -> None:
        with self.assertRaises(ExecgateError) as caught:
            await self.client.tasks.cancel("no-such-task")
        self.assertEqual(caught.exception.code, "EXECGATE_NOT_FOUND")

    async def test_retry_429_async(self) -> None:
        await asyncio.to_thread(drain_metered)
        result = await AsyncExecgateClient(URL, METERED_KEY).execute({"language": "javascript", "code": "40 + 2"})
        self.assertEqual(result.value, 42)

    async def test_retry_503_async(self) -> None:
        result = await AsyncExecgateClient(
            DRAINING_URL, KEY, retry=RetryPolicy(max_attempts=2, fallback_delay=0.05)).execute({"language": "javascript", "code": "1"})
        self.assertEqual(result.error.code, "EXECGATE_SHUTTING_DOWN")

    async def test_retry_budget_async(self) -> None:
        await asyncio.to_thread(drain_metered)
        with self.assertRaises(ExecgateError) as caught:
            await AsyncExecgateClient(URL, METERED_KEY, retry=RetryPolicy(budget=0.1)).languages()
        self.assertEqual(caught.exception.attempts, 1)

    async def test_cancel_async(self) -> None:
        # Cancelling the asyncio task closes the connection: the call ends with CancelledError, long before the run would.
        call = asyncio.ensure_future(self.client.execute({"language": "javascript", "code": BUSY.format(ms=3000), "timeoutMs": 5000}))
        await asyncio.sleep(0.2)
        call.cancel()
        started = time.monotonic()
        with self.assertRaises(asyncio.CancelledError):
            await call
        self.assertLess(time.monotonic() - started, 2.5)


if __name__ == "__main__":
    unittest.main()
