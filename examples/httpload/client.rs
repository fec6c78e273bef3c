//! The same calls through this crate's `Client` (`--client`): one client
//! per server (`ClientBuilder::connect_url`, the modern era), as many
//! threads sharing it as the connection count, each warming up, then
//! making its share of the calls one after another (`Client::call` of
//! `echo`, every answer's text checked). What it adds to the raw figures
//! is the client's own cost: its threads, its encoding and its routing.

#[cfg(all(feature = "client", feature = "http"))]
pub(crate) fn measure(
    target: &crate::Target,
    conns: usize,
    options: &crate::Options,
) -> Result<crate::Sample, String> {
    use std::sync::Barrier;
    use std::time::Instant;

    let url = format!(
        "http://{}{}",
        target.endpoint.authority, target.endpoint.path
    );
    let client = mcp_stdio::Client::builder()
        .era(mcp_stdio::EraPolicy::ModernOnly)
        .connect_url(&url)
        .map_err(|e| format!("connect {url}: {e}"))?;
    let per_thread = options.calls.div_ceil(conns);
    let start = Barrier::new(conns + 1);
    let call = |text: &str| -> Result<(), String> {
        let result = client
            .call("echo", serde_json::json!({ "text": text }))
            .map_err(|e| format!("call: {e}"))?;
        match result.text_content() == text {
            true => Ok(()),
            false => Err(format!("wrong answer: {:?}", result.text_content())),
        }
    };
    let (latencies, wall, cpu) = std::thread::scope(|s| -> Result<_, String> {
        let threads: Vec<_> = (0..conns)
            .map(|i| {
                let (call, start) = (&call, &start);
                s.spawn(move || -> Result<Vec<std::time::Duration>, String> {
                    let warm = (0..options.warmup).try_for_each(|n| call(&format!("warm {i} {n}")));
                    start.wait();
                    warm?;
                    let mut latencies = Vec::with_capacity(per_thread);
                    for n in 0..per_thread {
                        let sent = Instant::now();
                        call(&format!("call {i} {n}"))?;
                        latencies.push(sent.elapsed());
                    }
                    Ok(latencies)
                })
            })
            .collect();
        start.wait();
        let cpu_before = crate::procfs::cpu_seconds(target.pid)?;
        let started = Instant::now();
        let mut latencies = Vec::with_capacity(per_thread * conns);
        let mut failure = None;
        for thread in threads {
            match thread.join() {
                Ok(Ok(mut l)) => latencies.append(&mut l),
                Ok(Err(e)) => failure = failure.or(Some(e)),
                Err(_) => failure = failure.or(Some("a calling thread panicked".into())),
            }
        }
        let wall = started.elapsed();
        let cpu = crate::procfs::cpu_seconds(target.pid)? - cpu_before;
        match failure {
            Some(e) => Err(e),
            None => Ok((latencies, wall, cpu)),
        }
    })?;
    let _ = client.close();
    Ok(crate::summarize(latencies, wall, cpu))
}

#[cfg(not(all(feature = "client", feature = "http")))]
pub(crate) fn measure(
    _: &crate::Target,
    _: usize,
    _: &crate::Options,
) -> Result<crate::Sample, String> {
    Err("--client needs the features client and http".into())
}
