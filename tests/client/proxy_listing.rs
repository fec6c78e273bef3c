//! `proxy::serve_as` behind a spawned server that acknowledges the
//! proxy's listen and dies during the proxy's first listing: with a
//! restart policy the server is started again and listed, as often as
//! the policy says.

use super::proxy_setup::{
    LineByLine, caller_of, client_behind, events, proxy_in_front, record, restarting, start_noted,
};
use super::*;
use std::io::BufReader;

/// The everything server, its input read a line at a time; each start
/// appends `{"event":"started"}` to the wire file, each listen it reads
/// `{"event":"listen"}` and each listing (`tools/list`, `resources/list`,
/// ...) `{"event":"listing"}`. It exits (status 9) as it reads a listing,
/// before the server sees it, once it has read a listen (whose
/// acknowledgment has gone out then: the server answers at once):
/// `exits-at-first-listing` on its first start only, `exits-at-every-
/// listing` on every start.
pub fn fake_exits_at_listing(every_time: bool) -> ! {
    let (path, first) = start_noted();
    let exit = every_time || first;
    let mut listened = false;
    let reader = LineByLine::new(move |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line);
        if text.contains("\"subscriptions/listen\"") {
            record(&path, "listen");
            listened = true;
        } else if text.contains("/list\"") && listened {
            record(&path, "listing");
            if exit {
                std::process::exit(9);
            }
        }
        Ok(())
    });
    let server = everything::build();
    let _ = server.serve(Transport::new(BufReader::new(reader), std::io::stdout()));
    std::process::exit(0)
}

/// A server that acknowledges the proxy's listen and dies as the
/// proxy's first listing reaches it, under a restart policy: `serve_as`
/// returns, the server is started again, and the proxy mirrors its
/// tools. Before the fix `serve_as` failed with the listing's error
/// ("serve_as failed: the server exited ..."), restart or not.
pub fn a_server_that_dies_during_the_first_listing_is_restarted_and_listed()
-> Result<String, String> {
    let wire = Wire::new("proxy-listing");
    let command = server_command("exits-at-first-listing", Some(&wire));
    let (client, proxy) = proxy_in_front(restarting(2), command)
        .map_err(|e| format!("{e} (the wire: {:?})", wire.lines()))?;
    let caller = caller_of(&proxy, builder())?;
    let deadline = Instant::now() + WAIT;
    let tools = loop {
        let tools = caller
            .list_tools(None)
            .map_err(|e| format!("the proxy's tools/list failed: {e}"))?
            .tools;
        if !tools.is_empty() || Instant::now() > deadline {
            break tools;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let started = events(&wire, "started");
    let _ = caller.close();
    let _ = client.close_shared();
    drop(proxy);
    ensure!(
        !tools.is_empty(),
        "the proxy mirrors no tool {WAIT:?} after the restart ({started} starts)"
    );
    ensure!(started == 2, "{started} starts, want 2");
    Ok(String::new())
}

/// A server that dies during every listing is started again as often as
/// the policy says, no more: `serve_as` returns (nothing mirrored), and
/// the restarts end with the policy's.
pub fn a_server_that_dies_during_every_listing_is_restarted_as_the_policy_says()
-> Result<String, String> {
    let wire = Wire::new("proxy-listings");
    let command = server_command("exits-at-every-listing", Some(&wire));
    let client = client_behind(restarting(2), command)?;
    let proxy = mcp_stdio::proxy::serve_as(Arc::clone(&client));
    // Every start listened to and listed, the last one's death noted: no
    // fourth start follows (the restarts' backoff is 10 ms).
    let deadline = Instant::now() + Duration::from_secs(30);
    while events(&wire, "listing") < 3 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    let settled = Instant::now() + Duration::from_millis(500);
    while Instant::now() < settled {
        thread::sleep(Duration::from_millis(20));
    }
    let (started, listings) = (events(&wire, "started"), events(&wire, "listing"));
    let _ = client.close_shared();
    let proxy = proxy.map_err(|e| format!("serve_as failed: {e}"))?;
    drop(proxy);
    ensure!(
        started == 3 && listings == 3,
        "{started} starts and {listings} listings, want 3 of each"
    );
    Ok(String::new())
}

/// Review review-fixes15c. Claim: without a restart policy, a server
/// that dies during the first listing (after the listen's
/// acknowledgment) holds `serve_as` (it waits for a `Resubscribed` no
/// restart sends), or returns `Ok` with nothing mirrored. False:
/// `serve_as` returns the listing's error at once, and the server is
/// started once.
pub fn without_a_restart_policy_a_death_during_the_first_listing_is_serve_as_error()
-> Result<String, String> {
    let wire = Wire::new("proxy-listing-norestart");
    let command = server_command("exits-at-every-listing", Some(&wire));
    let client = client_behind(builder().trace(|_| {}), command)?;
    let started = Instant::now();
    let proxy = mcp_stdio::proxy::serve_as(Arc::clone(&client));
    let took = started.elapsed();
    let starts = events(&wire, "started");
    let _ = client.close_shared();
    ensure!(
        proxy.is_err(),
        "serve_as returned Ok without a restart policy ({starts} starts)"
    );
    ensure!(took < WAIT, "serve_as took {took:?}");
    ensure!(starts == 1, "{starts} starts, want 1");
    Ok(String::new())
}
