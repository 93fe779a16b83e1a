// The ACP client of .ci/acp-client: the protocol's own TypeScript SDK
// (@agentclientprotocol/sdk) drives `specloop acp` as an editor would:
// it starts it, opens a session on a workspace, sends two prompts
// (answering the permission request of each: allow, then reject) and
// checks the updates it received; the command runs in the default sandbox.
// Any failed check exits non-zero.
//
// node acp-client.mjs SPECLOOP_BINARY
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const specloop = process.argv[2];
const dir = mkdtempSync(join(tmpdir(), "specloop-acp-"));
const ws = join(dir, "ws");
const script = join(dir, "model.script");
mkdirSync(ws);
writeFileSync(join(ws, "hello.txt"), "hello\n");
writeFileSync(script, [
	`{"type":"tool_call","tool_name":"edit_file","arguments":{"path":"hello.txt","old_text":"hello","new_text":"goodbye"}}`,
	`{"type":"tool_call","tool_name":"run_command","arguments":{"command":"cat hello.txt"}}`,
	`{"type":"finish","answer":"said goodbye"}`,
].join("\n") + "\n");

const proc = spawn(specloop, ["acp", "--script", script, "--approval", "commands"], {
	stdio: ["pipe", "pipe", "inherit"],
	env: { ...process.env, XDG_STATE_HOME: join(dir, "state"), XDG_CONFIG_HOME: join(dir, "config") },
});

let failures = 0;
function check(ok, what) {
	console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
	if (!ok) failures++;
}

let updates = [];
const answers = [];
const asked = [];
const app = acp
	.client({ name: "specloop-ci" })
	.onNotification(acp.methods.client.session.update, ({ params }) => {
		updates.push(params.update);
	})
	.onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
		asked.push(params);
		return { outcome: { outcome: "selected", optionId: answers.shift() } };
	});

// take returns the updates so far, by kind, and forgets them.
function take() {
	const u = updates;
	updates = [];
	const calls = u.filter((x) => x.sessionUpdate === "tool_call");
	const results = u.filter((x) => x.sessionUpdate === "tool_call_update");
	const text = u.filter((x) => x.sessionUpdate === "agent_message_chunk").map((x) => x.content.text).join("");
	return { calls, results, text };
}

const stream = acp.ndJsonStream(Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout));
await app.connectWith(stream, async (ctx) => {
	const init = await ctx.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
	check(init.protocolVersion === acp.PROTOCOL_VERSION && init.agentCapabilities?.loadSession === true, "initialize: the protocol version and loadSession");
	const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
	check(typeof sessionId === "string" && sessionId !== "", "session/new gives a session id");

	answers.push("allow_once");
	let resp = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "say goodbye" }] });
	check(resp.stopReason === "end_turn", `the first prompt ends the turn (${resp.stopReason})`);
	let { calls, results, text } = take();
	check(calls.map((c) => c.kind).join() === "edit,execute", `the first turn's tool calls are an edit and a command (${calls.map((c) => c.kind)})`);
	const diff = results.flatMap((r) => r.content ?? []).find((c) => c.type === "diff");
	check(diff?.newText === "goodbye\n" && diff?.oldText === "hello\n" && diff?.path === join(ws, "hello.txt"), "the edit's update holds its diff");
	const ran = results.find((r) => r.toolCallId === calls[1]?.toolCallId && r.status === "completed");
	check(JSON.stringify(ran?.content ?? "").includes("goodbye"), "the command's update holds its output");
	check(asked.length === 1 && asked[0].toolCall.kind === "execute", "the command was asked about");
	check(text.includes("said goodbye"), "the agent's message");
	check(readFileSync(join(ws, "hello.txt"), "utf8") === "goodbye\n", "the file was edited");

	answers.push("reject_once");
	resp = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "again" }] });
	check(resp.stopReason === "end_turn", `the second prompt, a follow-up, ends the turn (${resp.stopReason})`);
	({ calls, results } = take());
	const rejected = results.find((r) => r.toolCallId === calls[1]?.toolCallId);
	check(asked.length === 2 && rejected?.status === "failed", "the rejected command failed");
});
proc.stdin.end();
proc.kill();
console.log(failures === 0 ? "== acp client ok" : `== acp client: ${failures} checks failed`);
process.exit(failures === 0 ? 0 : 1);
