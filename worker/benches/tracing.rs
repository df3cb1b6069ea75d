//! What tracing adds to a request's own thread (issue 7): the sampling decision and, when
//! sampled, building the request span, its five stage spans and two S3 call spans and
//! handing them to the batch processor, per request, at sample ratios 0, 0.01 and 1, next
//! to no tracing at all. The batch processor exports on its own thread to an OTLP/gRPC
//! endpoint nobody listens on (its cost is in `make bench-tracing`, whole-process CPU).
//!
//! `cargo bench -p worker --bench tracing`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use run::records::{Outcome, Record};
use s3::{OpStats, stats_for_bench};
use worker::traces::{OtlpProtocol, RunAttributes, TraceConfig, Traces};

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let _guard = rt.enter();
    let run = RunAttributes {
        run_id: "bench".into(),
        campaign: "bench".into(),
        mode: "ml-kem-768",
        backend: "aws-lc",
        operation: "get",
        object_size: 65_536,
        bucket: "bench".into(),
    };
    let start = Instant::now();
    let stats: OpStats = stats_for_bench(start);
    let record = Record {
        outcome: Some(Outcome::Ok),
        total: Duration::from_micros(900),
        s3_requests: 2,
        ..Record::default()
    };
    let mut g = c.benchmark_group("tracing per request");
    g.bench_function("off", |b| {
        let traces: Option<Traces> = None;
        b.iter(|| {
            if let Some(t) = black_box(&traces)
                && t.sample(false)
            {
                t.record(start, &record, Some(&stats), None);
            }
        });
    });
    for ratio in [0.0, 0.01, 1.0] {
        let config = TraceConfig {
            endpoint: "http://127.0.0.1:9".into(),
            protocol: OtlpProtocol::Grpc,
            sample_ratio: ratio,
        };
        let traces = Some(Traces::start(&config, &run, Vec::new(), 1).expect("traces"));
        g.bench_function(format!("ratio {ratio}"), |b| {
            b.iter(|| {
                if let Some(t) = black_box(&traces)
                    && t.sample(false)
                {
                    t.record(start, &record, Some(&stats), None);
                }
            });
        });
        if let Some(t) = traces {
            drop(t.finish());
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
