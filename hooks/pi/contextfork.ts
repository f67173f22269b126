// contextfork for pi: live folding of the context pi sends, and the contextfork_context tool.
// Installed by `contextfork hooks install --pi`; `contextfork hooks uninstall --pi` removes it.
// Plain TypeScript without imports beyond node built-ins: pi loads it as is (no build step).
//
// On every `context` event the messages go to a long-lived `contextfork pi-worker` (JSON lines
// over stdin/stdout, started once per pi session, only the new messages are sent); it answers
// with a plan over pi's own messages (keep i / replace i's text / insert a fold note). If the
// worker is missing, fails, answers late (CONTEXTFORK_PI_TIMEOUT_MS, default 1000) or answers
// something invalid, the reason is logged and pi never breaks because of contextfork: once
// folding has started, the call goes out as the worker's last plan with the messages added since
// kept as they are (its folds stay folded: their originals were stored before that plan was
// sent, and the prompt's prefix stays the one the provider cached); before that, or when pi's
// history is no longer the one that plan covered, pi's messages go out untouched. A worker that dies is started again on the next event (it is sent the
// whole history), at most CONTEXTFORK_PI_RESTARTS times a session (default 3); after that pi's
// messages pass through for the rest of the session. Log: <git root>/.contextfork/logs/pi.log (else ~/.pi/agent/contextfork.log).

import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";

// The absolute contextfork command, written by `hooks install` (checked to run there).
const CONTEXTFORK: string[] = /*CONTEXTFORK_ARGV*/ ["contextfork"] /*END_CONTEXTFORK_ARGV*/;
const TIMEOUT_MS = Number(process.env.CONTEXTFORK_PI_TIMEOUT_MS || 1000);
const VERB_TIMEOUT_MS = 30000;
const MAX_RESTARTS = Math.max(0, Number(process.env.CONTEXTFORK_PI_RESTARTS ?? 3) || 0);
const VERBS = ["status", "peek", "brief", "expand", "refold", "pin", "unpin", "reboundary", "unmark"];

type Pending = { resolve: (v: any) => void; timer: any };

function gitRoot(start: string): string | undefined {
	let cur = start;
	for (let i = 0; i < 64; i++) {
		if (existsSync(join(cur, ".git"))) return cur;
		const up = dirname(cur);
		if (up === cur) return undefined;
		cur = up;
	}
	return undefined;
}

function fingerprint(m: any): string {
	return `${m?.role}:${m?.timestamp}`;
}

function applyPlan(messages: any[], plan: any): any[] | string {
	if (!Array.isArray(plan)) return "plan is not an array";
	const out: any[] = [];
	let last = -1;
	for (const item of plan) {
		if (typeof item === "number") {
			if (!Number.isInteger(item) || item <= last || item >= messages.length) return `bad index ${item}`;
			last = item;
			out.push(messages[item]);
		} else if (item && typeof item === "object" && typeof item.r === "number") {
			if (item.r <= last || item.r >= messages.length || !Array.isArray(item.content)) return `bad replace ${item.r}`;
			last = item.r;
			out.push({ ...messages[item.r], content: item.content });
		} else if (item && typeof item === "object" && item.m && typeof item.m === "object") {
			out.push(item.m);
		} else {
			return "unknown plan item";
		}
	}
	return out;
}

// The worker's last plan, extended by the messages pi added since (kept as they are), while pi's
// history still starts with the messages that plan covered; else null.
function extendPlan(messages: any[], plan: any[] | null, fps: string[]): any[] | null {
	if (!plan || messages.length < fps.length) return null;
	for (let i = 0; i < fps.length; i++) if (fingerprint(messages[i]) !== fps[i]) return null;
	const out = [...plan];
	for (let i = fps.length; i < messages.length; i++) out.push(i);
	return out;
}

export default function contextfork(pi: any) {
	let child: any = null;
	let lastPlan: any[] | null = null; // the last plan the worker gave (folding has started)
	let lastFps: string[] = []; // fingerprints of the messages it covered
	let dead: string | null = null;
	let deaths = 0;
	let lastCtx: any = null;
	let nextId = 1;
	let sent = 0;
	let logPath: string | null = null;
	const pending = new Map<number, Pending>();

	function log(record: Record<string, unknown>) {
		try {
			if (!logPath) return;
			mkdirSync(dirname(logPath), { recursive: true });
			appendFileSync(logPath, `${JSON.stringify({ ts: new Date().toISOString(), ...record })}\n`);
		} catch {
			// logging must never break pi
		}
	}

	function setLog(cwd: string) {
		if (logPath) return;
		const root = gitRoot(cwd);
		logPath = root ? join(root, ".contextfork", "logs", "pi.log") : join(homedir(), ".pi", "agent", "contextfork.log");
	}

	function settle(reason: string) {
		for (const [id, p] of pending) {
			clearTimeout(p.timer);
			p.resolve({ ok: false, error: reason });
			pending.delete(id);
		}
	}

	// One death per worker, however many of error/exit/stdin-error report it.
	function lost(me: any, reason: string) {
		if (child !== me) return;
		child = null;
		sent = 0; // a new worker knows nothing: it gets the whole history
		deaths++;
		settle(reason);
		if (deaths > MAX_RESTARTS) {
			dead = `${reason}; not restarted (${deaths} deaths this session)`;
			log({ event: "worker", level: "error", error: dead });
		} else {
			log({ event: "worker", level: "error", error: reason, restart: `${deaths} of ${MAX_RESTARTS}` });
			if (lastCtx) worker(lastCtx); // now, so its imports are paid before the next event
		}
	}

	function worker(ctx: any): any {
		setLog(ctx.cwd);
		lastCtx = ctx;
		if (child || dead) return child;
		let me: any;
		try {
			me = spawn(CONTEXTFORK[0], [...CONTEXTFORK.slice(1), "pi-worker"], {
				cwd: ctx.cwd,
				stdio: ["pipe", "pipe", "pipe"],
				env: process.env,
			});
		} catch (err) {
			dead = `cannot start the worker: ${err}`;
			log({ event: "worker", level: "error", error: dead });
			return null;
		}
		child = me;
		me.on("error", (err: any) => lost(me, `worker error: ${err}`));
		me.on("exit", (code: any, signal: any) => lost(me, `worker exited (${code ?? signal})`));
		me.stdin.on("error", () => lost(me, "worker stdin closed"));
		createInterface({ input: me.stdout }).on("line", (line: string) => {
			let msg: any;
			try {
				msg = JSON.parse(line);
			} catch {
				log({ event: "worker", level: "error", error: "invalid JSON from the worker" });
				return;
			}
			const p = pending.get(msg?.id);
			if (!p) return; // an answer we stopped waiting for
			clearTimeout(p.timer);
			pending.delete(msg.id);
			p.resolve(msg);
		});
		createInterface({ input: me.stderr }).on("line", (line: string) => log({ event: "worker-stderr", line }));
		me.unref?.();
		log({ event: "worker", action: deaths ? "restarted" : "started", command: CONTEXTFORK, pid: me.pid });
		return me;
	}

	function request(ctx: any, body: Record<string, unknown>, timeoutMs: number): Promise<any> {
		const w = worker(ctx);
		if (!w || dead) return Promise.resolve({ ok: false, error: dead ?? "no worker" });
		const id = nextId++;
		return new Promise((resolve) => {
			const timer = setTimeout(() => {
				pending.delete(id);
				resolve({ ok: false, error: `no answer within ${timeoutMs} ms` });
			}, timeoutMs);
			pending.set(id, { resolve, timer });
			try {
				w.stdin.write(`${JSON.stringify({ id, ...body })}\n`);
			} catch (err) {
				clearTimeout(timer);
				pending.delete(id);
				resolve({ ok: false, error: `write failed: ${err}` });
			}
		});
	}

	function common(ctx: any) {
		return { session: ctx.sessionManager?.getSessionId?.(), cwd: ctx.cwd, context_window: ctx.model?.contextWindow };
	}

	pi.on("context", async (event: any, ctx: any) => {
		const started = performance.now();
		const messages: any[] = event.messages;
		let base = sent <= messages.length ? sent : 0;
		const render = (from: number) =>
			request(
				ctx,
				{ op: "render", ...common(ctx), base: from, prev_fp: from > 0 ? fingerprint(messages[from - 1]) : null, messages: messages.slice(from) },
				TIMEOUT_MS,
			);
		const generation = deaths;
		let res = await render(base);
		if (deaths === generation) sent = messages.length; // else a new worker: it needs it all
		if (res?.need === "full" && base > 0) {
			base = 0;
			res = await render(0);
		}
		// No plan in time (or none usable): the last one, extended, once folding has started.
		const fallback = (why: string) => {
			const plan = extendPlan(messages, lastPlan, lastFps);
			const out = plan ? applyPlan(messages, plan) : null;
			if (Array.isArray(out)) {
				log({ event: "context", action: "last-plan", why, covered: lastFps.length, added: messages.length - lastFps.length });
				return { messages: out };
			}
			log({ event: "context", action: "pass-through", why });
			return undefined;
		};
		if (!res?.ok) return fallback(res?.error ?? "no answer");
		if (res.plan == null && res.why) return fallback(res.why);
		const out = res.plan == null ? undefined : applyPlan(messages, res.plan);
		if (typeof out === "string") return fallback(`invalid plan: ${out}`);
		lastPlan = out ? res.plan : null; // nothing to fold (a new history): nothing to fall back on
		lastFps = out ? messages.map(fingerprint) : [];
		if (process.env.CONTEXTFORK_PI_TIMING) {
			log({ event: "context", action: "render", ms: performance.now() - started, worker_ms: res.ms, ...res.stats });
		}
		return out ? { messages: out } : undefined;
	});

	function preCompact(ctx: any, trigger: string) {
		// Fold the whole transcript and export a handoff package, as Claude Code's PreCompact does.
		try {
			const p = spawn(CONTEXTFORK[0], [...CONTEXTFORK.slice(1), "hooks", "run", "pre-compact"], {
				cwd: ctx.cwd,
				stdio: ["pipe", "ignore", "ignore"],
				detached: true,
				env: process.env,
			});
			p.on("error", (err: any) => log({ event: "pre-compact", level: "error", error: String(err) }));
			p.stdin.end(
				JSON.stringify({
					hook_event_name: "PreCompact",
					harness: "pi",
					session_id: ctx.sessionManager?.getSessionId?.(),
					transcript_path: ctx.sessionManager?.getSessionFile?.(),
					cwd: ctx.cwd,
					trigger,
				}),
			);
			p.unref();
		} catch (err) {
			log({ event: "pre-compact", level: "error", error: String(err) });
		}
	}

	pi.on("session_before_compact", async (event: any, ctx: any) => {
		setLog(ctx.cwd);
		const prep = event.preparation ?? {};
		const window = ctx.model?.contextWindow ?? 0;
		const reserve = prep.settings?.reserveTokens ?? 16384;
		const tokens = prep.tokensBefore ?? 0;
		// pi compacts on its own when the window passes window - reserve (threshold); a /compact
		// below that, or an overflow (the provider already refused), is not ours to answer.
		const threshold = window > 0 && tokens > window - reserve && tokens < window;
		preCompact(ctx, threshold ? "auto" : "manual");
		if (!threshold) {
			log({ event: "compact", action: "pass-through", tokens, window });
			return;
		}
		const res = await request(ctx, { op: "compact", ...common(ctx), trigger: "threshold" }, TIMEOUT_MS);
		if (!res?.ok) {
			log({ event: "compact", action: "pass-through", why: res?.error ?? "no answer" });
			return;
		}
		log({ event: "compact", action: "epoch-commit", tokens, window });
		return { cancel: true };
	});

	pi.registerTool({
		name: "contextfork_context",
		label: "contextfork",
		description:
			"Curate your own context. Folded history shows as notes naming a fold id (F<n>). " +
			"status: the fold index and your decisions. peek: target=F<n> (or a step) returns the exact, " +
			"verified original bytes (offset, bytes); or step=N (offset, max_chars). " +
			"pin/unpin (held raw through every fold), expand/refold, brief (text: your own words " +
			"for the fold), reboundary, unmark (kind): name steps with step=N or steps=[first, last].",
		parameters: {
			type: "object",
			properties: {
				verb: { type: "string", enum: VERBS, description: "what to do" },
				target: { type: "string", description: "peek: a fold id F<n> from a note, or a step number" },
				step: { type: "integer", description: "one step" },
				steps: { type: "array", items: { type: "integer" }, description: "[first, last] step span" },
				key: { type: "string", description: "a step's stable key" },
				text: { type: "string", description: "brief: your own words for the folded steps" },
				kind: { type: "string", description: "unmark: all | pin | expand | brief | boundary" },
				clear: { type: "boolean", description: "reboundary: back to automatic" },
				offset: { type: "integer", description: "peek: byte offset" },
				bytes: { type: "integer", description: "peek (target): how many bytes" },
				max_chars: { type: "integer", description: "peek (step): how many characters" },
				record: { type: "boolean", description: "peek (step): keep it expanded" },
			},
			required: ["verb"],
		},
		async execute(_id: string, params: any, _signal: any, _onUpdate: any, ctx: any) {
			const { verb, ...args } = params ?? {};
			const res = await request(ctx, { op: "verb", ...common(ctx), verb, args }, VERB_TIMEOUT_MS);
			if (!res?.ok) throw new Error(`contextfork: ${res?.error ?? "no answer"}`);
			return { content: [{ type: "text", text: String(res.text ?? "") }], details: {} };
		},
	});

	// Subagents (docs/slice.md): a pi started by another pi (the subagent example extension runs
	// `pi --no-session …` with the parent's environment) inherits CONTEXTFORK_PI_PARENT, set below
	// by the parent; its first prompt then gets the parent's slice (`contextfork slice`).
	const PARENT_ENV = "CONTEXTFORK_PI_PARENT";
	const SLICE_TIMEOUT_MS = Number(process.env.CONTEXTFORK_PI_SLICE_TIMEOUT_MS || 5000);
	let parentOf: any = null;
	try {
		parentOf = process.env[PARENT_ENV] ? JSON.parse(String(process.env[PARENT_ENV])) : null;
	} catch {
		parentOf = null;
	}
	let sliced = false;

	function slice(ctx: any, prompt: string): Promise<string> {
		return new Promise((resolve) => {
			let out = "";
			let done = false;
			const finish = (v: string) => {
				if (!done) {
					done = true;
					resolve(v);
				}
			};
			try {
				// The child's own command line names its agent (pi's subagent extension passes
				// `--append-system-prompt …/prompt-<agent>.md` and `--tools …`): it picks the role.
				const args = ["slice", "--transcript", String(parentOf.transcript), "--task", prompt,
					"--child-argv", JSON.stringify(process.argv.slice(1)), "--json"];
				if (typeof parentOf.session === "string") args.push("--session", parentOf.session);
				const p = spawn(CONTEXTFORK[0], [...CONTEXTFORK.slice(1), ...args], {
					cwd: ctx.cwd,
					stdio: ["ignore", "pipe", "ignore"],
					env: process.env,
				});
				const timer = setTimeout(() => {
					try {
						p.kill();
					} catch {
						// gone
					}
					finish("");
				}, SLICE_TIMEOUT_MS);
				p.stdout.on("data", (d: any) => {
					out += d;
				});
				p.on("error", () => {
					clearTimeout(timer);
					finish("");
				});
				p.on("close", () => {
					clearTimeout(timer);
					try {
						finish(String(JSON.parse(out)?.data?.text ?? ""));
					} catch {
						finish("");
					}
				});
			} catch {
				finish("");
			}
		});
	}

	pi.on("before_agent_start", async (event: any, ctx: any) => {
		if (!parentOf?.transcript || sliced) return;
		if (parentOf.session && parentOf.session === ctx.sessionManager?.getSessionId?.()) return;
		sliced = true;
		const text = await slice(ctx, String(event?.prompt ?? ""));
		log({ event: "subagent-start", action: text ? "inject" : "none", parent: parentOf.session, chars: text.length });
		if (!text) return;
		return { message: { customType: "contextfork-slice", content: text, display: false } };
	});

	// Start the worker with the session: its imports (~1 s) are paid before the first call.
	pi.on("session_start", async (_event: any, ctx: any) => {
		worker(ctx);
		const file = ctx.sessionManager?.getSessionFile?.();
		const id = ctx.sessionManager?.getSessionId?.();
		if (file && id) process.env[PARENT_ENV] = JSON.stringify({ session: id, transcript: file });
	});

	pi.on("session_shutdown", async () => {
		// Let go of the worker: its exit is the session's end, not a death to restart. What it
		// was asked before still gets its answer (it reads to the end of its stdin) or times out.
		const old = child;
		child = null;
		sent = 0;
		try {
			old?.stdin?.end();
		} catch {
			// already gone
		}
	});
}
