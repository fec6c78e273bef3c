//! The runner: each check on a thread of its own within its deadline, on
//! the sessions shared by era (given back after the check unless it
//! spoiled them), its verdict made a status by the check's level; a
//! check that overruns its deadline is failed and its servers killed;
//! and a server that stops answering ends the run early, each check left
//! saying why.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::driver::{Era, Session, Target, Transcript};
use super::{Args, Check, Ctx, Facts, Level, Outcome, Status, Verdict, short};

/// How many checks in a row may wait a whole wait and hear nothing from
/// the server before the checker asks whether it still answers at all.
const HUNG_IN_ROW: usize = 3;

/// Runs each check on a thread of its own, within its deadline; `each`
/// sees each outcome as it comes. A server that stops answering costs
/// `HUNG_IN_ROW` checks (each at most its deadline) and one handshake's
/// wait, not every check's deadline: once that many checks in a row have
/// heard nothing from it and a new server does not answer its handshake,
/// the rest are skipped ("not run: the server stopped answering").
pub(super) fn run_checks(
    checks: &[&'static Check],
    target: &Target,
    facts: Facts,
    args: &Args,
    mut each: impl FnMut(&Outcome),
) -> Vec<Outcome> {
    let target = Arc::new(target.clone());
    let facts = Arc::new(facts);
    let calls = Arc::new(args.calls.clone());
    let mut shared = BTreeMap::new();
    let mut outcomes = Vec::new();
    // Checks in a row that waited a whole wait and heard nothing from the
    // server; at `HUNG_IN_ROW`, a new server is started, and if it does
    // not answer its handshake within the wait, no check is run any more:
    // `stopped` says why.
    let mut hung = 0;
    let mut stopped: Option<String> = None;
    for &check in checks {
        if stopped.is_none() && hung >= HUNG_IN_ROW {
            hung = 0;
            let era = facts.primary.unwrap_or(Era::Modern);
            let probe = Transcript::default();
            // The handshake: `initialize` (legacy), `server/discover`
            // (modern, which has none of its own).
            let answered =
                Session::start(&target, era, &probe, args.wait).and_then(|mut s| match era {
                    Era::Modern => {
                        let id = s.request("server/discover", serde_json::json!({}));
                        s.answered(&id, args.wait).map_err(|e| e.to_string())
                    }
                    Era::Legacy => Ok(()),
                });
            if let Err(e) = answered {
                stopped = Some(format!(
                    "not run: the server stopped answering ({HUNG_IN_ROW} checks in a row heard nothing from it, and a new server did not answer its handshake: {})",
                    short(&e, 200)
                ));
            }
            probe.kill_servers();
        }
        if let Some(reason) = &stopped {
            let outcome = Outcome {
                check,
                status: Status::Skip,
                reason: reason.clone(),
                evidence: Vec::new(),
                elapsed: Duration::ZERO,
            };
            each(&outcome);
            outcomes.push(outcome);
            continue;
        }
        let transcript = Transcript::default();
        let ctx = Ctx {
            target: Arc::clone(&target),
            facts: Arc::clone(&facts),
            calls: Arc::clone(&calls),
            wait: args.wait,
            until: Instant::now() + args.deadline,
            transcript: transcript.clone(),
            shared: std::mem::take(&mut shared),
        };
        // The shared sessions' evidence, reachable if the check never
        // comes back.
        let shared_evidence: Vec<Transcript> =
            ctx.shared.values().map(|(_, t)| t.clone()).collect();
        let began = Instant::now();
        // One slot: the thread's one verdict, never waited on after the
        // deadline.
        let (tx, rx) = crossbeam_channel::bounded(1);
        let spawned = std::thread::Builder::new()
            .name(format!("check {}", check.id))
            .spawn(move || {
                let mut ctx = ctx;
                let verdict = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    (check.run)(&mut ctx)
                }))
                .unwrap_or_else(|_| {
                    Verdict::Fail(
                        "the check itself panicked (a bug of the checker: please report it)".into(),
                    )
                });
                let _ = tx.send((verdict, ctx));
            });
        let (verdict, evidence) = match spawned {
            Err(e) => (
                Verdict::Fail(format!("cannot start a thread: {e}")),
                Vec::new(),
            ),
            Ok(_) => match rx.recv_timeout(args.deadline) {
                Ok((verdict, ctx)) => {
                    let mut evidence = Vec::new();
                    for (_, t) in ctx.shared.values() {
                        evidence.extend(t.take());
                    }
                    evidence.extend(ctx.transcript.take());
                    shared = ctx.shared;
                    (verdict, evidence)
                }
                Err(_) => {
                    // The thread still holds the sessions, and may be
                    // blocked writing to a server that does not read: its
                    // servers are killed (the writes fail, the thread
                    // ends), and the next check starts new ones.
                    let mut evidence = Vec::new();
                    for t in shared_evidence.iter().chain([&transcript]) {
                        t.kill_servers();
                    }
                    for t in &shared_evidence {
                        evidence.extend(t.take());
                    }
                    evidence.extend(transcript.take());
                    (
                        Verdict::Fail(format!(
                            "no verdict within the check's deadline of {:.0} s: the server stopped answering",
                            args.deadline.as_secs_f64()
                        )),
                        evidence,
                    )
                }
            },
        };
        let (status, reason) = match verdict {
            Verdict::Pass(reason) => (Status::Pass, reason),
            Verdict::Skip(reason) => (Status::Skip, reason),
            Verdict::Fail(reason) if check.level == Level::Must => (Status::Fail, reason),
            Verdict::Fail(reason) => (Status::Warn, reason),
        };
        let outcome = Outcome {
            check,
            status,
            reason,
            evidence,
            elapsed: began.elapsed(),
        };
        // Heard from the server, or waited a whole wait and heard nothing
        // (a check that needed no server changes neither).
        if outcome.evidence.iter().any(|e| e.kind == "received") {
            hung = 0;
        } else if outcome.elapsed >= args.wait {
            hung += 1;
        }
        each(&outcome);
        outcomes.push(outcome);
    }
    outcomes
}
