//! `.ci/run`'s background lane (the Redis tests, then the replicas'
//! scripts, beside the peers' steps): its own lines, run by `bash` with
//! stand-in steps, as the script runs them.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// `.ci/run`'s `timed` function and its `trap` line with the function it
/// calls (`end_tree`), as written there.
fn script_parts() -> (String, String) {
    let script = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run"))
        .expect(".ci/run");
    let function = |name: &str| {
        let start = script.find(&format!("\n{name}() {{")).expect(name) + 1;
        let end = start + script[start..].find("\n}\n").expect("its end") + 3;
        script[start..end].to_owned()
    };
    let trap = (script.lines())
        .find(|line| line.starts_with("trap "))
        .expect("a trap line")
        .to_owned();
    (function("timed"), format!("{}{trap}", function("end_tree")))
}

/// Review 47b, claim 6: a failed step of the background lane fails CI.
/// `.ci/run` runs the lane as `( timed tests/redis.sh && timed
/// tests/scale_out.sh && ... ) &` and then `wait "$REPLICAS" || exit 1`;
/// but bash ignores `set -e` inside a function called anywhere in an `&&`
/// list but its last command, so `timed` runs `echo` after the failed step
/// and returns 0: the lane goes on to the next step and ends 0. Here a
/// lane of `timed false && timed true`: on main the step after the failed
/// one ran and `wait` saw 0 (only a failure of the lane's last step, the
/// faults script, can fail CI).
#[test]
fn a_failed_step_of_the_background_lane_fails_the_run() {
    let (timed, _) = script_parts();
    let script = format!(
        "set -euo pipefail\n{timed}\n( timed false && timed echo next-step-ran ) &\nLANE=$!\n\
         wait \"$LANE\" || exit 3\nexit 0\n"
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains("next-step-ran"),
        "the lane went on after a failed step"
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "the lane's failure did not fail the run: {out:?}"
    );
}

/// Review 47b, claim 7: what runs in the lane ends with a failed run.
/// The `trap` (`kill $(jobs -p)`) signals the lane's subshell, not the
/// step it runs: the step (tests/scale_out.sh with its redis-server and
/// nginx) goes on, orphaned. Before eacb106 the Redis job was
/// `tests/redis.sh &` itself. Here the lane's step is a `sleep 30` and the
/// run fails meanwhile: on main the sleep was still running after the
/// run had ended.
#[test]
fn a_failed_run_ends_the_step_its_lane_runs() {
    let (timed, trap) = script_parts();
    let dir = std::env::temp_dir().join(format!("ci-lane-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("step.pid");
    let script = format!(
        "set -euo pipefail\n{trap}\n{timed}\n\
         ( timed sh -c 'echo $$ > \"$0\"; exec sleep 30' {pid} && true ) >/dev/null 2>&1 &\n\
         while [ ! -s {pid} ]; do sleep 0.05; done\nfalse\n",
        pid = pidfile.display()
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the run failed: {out:?}");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    let alive = |pid: i32| Path::new(&format!("/proc/{pid}")).exists();
    while alive(pid) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    let survived = alive(pid);
    if survived {
        // The stand-in step this test started, by its pid.
        let _ = Command::new("kill").arg(pid.to_string()).status();
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !survived,
        "the lane's step (pid {pid}) outlived the failed run by 5 s"
    );
}

/// The lane of `.ci/run` that writes `target/ci-<log>.log`, as written
/// there: from its `(` line to its `) >target/ci-<log>.log 2>&1 &` line.
fn lane(script: &str, log: &str) -> String {
    let end_line = format!(") >target/ci-{log}.log 2>&1 &\n");
    let end = script.find(&end_line).expect(log) + end_line.len();
    let start = script[..end].rfind("\n(\n").expect("its start") + 1;
    script[start..end].to_owned()
}

/// Runs `lane` in a directory of its own with every step a stand-in that
/// counts itself (`cargo` and the scripts under `tests/`; `renice` does
/// nothing and `nice` runs its command), the
/// `fail_at`th failing (0: none); returns whether `wait` on the lane saw a
/// failure, and how many steps ran.
fn run_lane(lane: &str, fail_at: usize) -> (bool, usize) {
    let (timed, _) = script_parts();
    let dir = std::env::temp_dir().join(format!(
        "ci-lanes-{}-{fail_at}-{}",
        std::process::id(),
        lane.len()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("target")).unwrap();
    let count = dir.join("count");
    std::fs::write(&count, "0").unwrap();
    let step = "#!/usr/bin/env bash\nn=$(( $(cat \"$COUNT\") + 1 ))\necho \"$n\" >\"$COUNT\"\n[ \"$n\" != \"$FAIL_AT\" ]\n";
    for script in [
        "tests/static.sh",
        "tests/redis.sh",
        "tests/scale_out.sh",
        "tests/scale_out_faults_check.sh",
        "tests/https.sh",
        "tests/check-servers/run.sh",
        "tests/conformance/run-http.sh",
        "tests/conformance/run-client.sh",
    ] {
        let path = dir.join(script);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, step).unwrap();
        let _ = Command::new("chmod").arg("+x").arg(&path).status();
    }
    let script = format!(
        "set -euo pipefail\nALL_FEATURES=http\n{timed}\n\
         cargo() {{ tests/static.sh; }}\nrenice() {{ true; }}\n\
         nice() {{ [ \"$1\" != -n ] || shift 2; \"$@\"; }}\n\
         {lane}LANE=$!\nwait \"$LANE\" || exit 3\nexit 0\n"
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&dir)
        .env("COUNT", &count)
        .env("FAIL_AT", fail_at.to_string())
        .output()
        .unwrap();
    let ran = std::fs::read_to_string(&count)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "the lane's stand-in run broke: {out:?}"
    );
    (out.status.code() == Some(3), ran)
}

/// Claim (review s9 of b242734, `.ci/run` in lanes): a failed step of any
/// lane run in the background (the lints and docs in two, the modern era, the
/// peers' check lane, the replicas) fails that lane, which the run waits
/// for, and no step after it in that lane runs.
#[test]
fn a_failed_step_of_any_lane_fails_the_lane_and_runs_no_later_step() {
    let script = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run"))
        .expect(".ci/run");
    for log in ["lint", "lint-all", "modern", "check", "replicas"] {
        let lane = lane(&script, log);
        let (failed, steps) = run_lane(&lane, 0);
        assert!(!failed && steps > 1, "the {log} lane: {steps} steps");
        for fail_at in 1..=steps {
            let (failed, ran) = run_lane(&lane, fail_at);
            assert!(
                failed && ran == fail_at,
                "the {log} lane, step {fail_at} of {steps} failing: the lane failed: {failed}, {ran} steps ran"
            );
        }
    }
}
