"""Independent client check of the human in the loop (issue 18): the
official Python MCP SDK, with an elicitation callback standing in for its
human, drives agent tasks whose approvals ServerFS puts to that human as
`elicitation/create` forms.

Usage: elicitation_client.py SERVERFS CONFIG

For each of the form's answers (accept with approve_once, decline,
cancel) it submits `fake: approval echo hi` to workdir `demo`, answers the
form the server sends, waits for the task to end and prints one JSON line:
{"action", "status", "final_response", "forms", "form_names_the_command"}.
A dismissed form (cancel) decides nothing and comes back; the callback
declines it the second time.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

TERMINAL = {"succeeded", "failed", "cancelled", "interrupted"}


class Human:
    """Answers each form with the action the test is at, and keeps it."""

    def __init__(self) -> None:
        self.action = "accept"
        self.forms: list[types.ElicitRequestParams] = []

    async def __call__(self, context, params):
        self.forms.append(params)
        if self.action == "accept":
            return types.ElicitResult(action="accept", content={"decision": "approve_once"})
        if self.action == "cancel":
            self.action = "decline"
            return types.ElicitResult(action="cancel")
        return types.ElicitResult(action=self.action)


async def wait_for(session: ClientSession, task: str, done) -> dict:
    for _ in range(300):
        result = await session.call_tool(
            "get_agent_task", {"task_id": task, "wait_seconds": 1}
        )
        if result.is_error:
            raise SystemExit(f"get_agent_task failed: {result.content}")
        view = result.structured_content
        if done(view):
            return view
    raise SystemExit(f"task {task} never got there: {view}")


async def main(serverfs: str, config: str) -> None:
    human = Human()
    server = StdioServerParameters(command=serverfs, args=["serve", "--config", config])
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, elicitation_callback=human) as session:
            await session.initialize()
            for action in ["accept", "decline", "cancel"]:
                human.action = action
                asked = len(human.forms)
                submitted = await session.call_tool(
                    "submit_agent_task",
                    {"runtime": "fake", "workdir": "demo", "prompt": "fake: approval echo hi"},
                )
                if submitted.is_error:
                    raise SystemExit(f"submit_agent_task failed: {submitted.content}")
                task = submitted.structured_content["task_id"]
                view = await wait_for(session, task, lambda view: view["status"] in TERMINAL)
                form = human.forms[asked] if len(human.forms) > asked else None
                print(
                    json.dumps(
                        {
                            "action": action,
                            "status": view["status"],
                            "final_response": view["final_response"],
                            "forms": len(human.forms) - asked,
                            "form_names_the_command": form is not None
                            and "echo hi" in form.message,
                        }
                    ),
                    flush=True,
                )


asyncio.run(main(sys.argv[1], sys.argv[2]))
