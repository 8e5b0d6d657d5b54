//! Adit on large manuscripts (criterion). Figures and the command that
//! produced them are in BENCHMARKS.md.
//!
//! * `100_edits/1MB` and `/4MB`: 100 exact edits spread over a mixed
//!   Japanese/English manuscript, applied in one atomic call (cost should
//!   grow linearly with the size).
//! * `one_edit/exact/*`: the exact path for one edit.
//! * `one_edit/no_match/*`: the worst case, a search found at no level (all
//!   four levels run, then the closest-region search).

use atelier_agent::adit::{apply_edits, Edit};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

/// A deterministic manuscript of about `bytes` bytes: numbered paragraphs
/// mixing Japanese and English, each line unique.
fn manuscript(bytes: usize) -> String {
    const JA: [&str; 6] = [
        "吾輩は猫である。",
        "名前はまだ無い。",
        "どこで生れたかとんと見当がつかぬ。",
        "何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。",
        "雨が降っていた。",
        "　彼女は窓の外を見た。",
    ];
    const EN: [&str; 5] = [
        "The quick brown fox jumps over the lazy dog.",
        "It was a bright cold day in April.",
        "Nobody was awake in the small town.",
        "She closed the notebook and listened.",
        "The rain had not stopped since morning.",
    ];
    let mut out = String::with_capacity(bytes + 256);
    let mut n = 0usize;
    while out.len() < bytes {
        let ja = JA[n % JA.len()];
        let en = EN[(n / 3) % EN.len()];
        out.push_str(&format!("\u{3000}段落{n}：{ja} {en} ({n})\n"));
        n += 1;
    }
    out
}

/// 100 edits, each an exact, unique search at evenly spread paragraphs.
fn spread_edits(doc: &str) -> Vec<Edit> {
    let lines = doc.lines().count();
    (0..100)
        .map(|i| {
            let n = i * (lines / 100);
            Edit::new(format!("段落{n}："), format!("第{n}段："))
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("adit");
    group.sample_size(30);
    for mb in [1usize, 4] {
        let doc = manuscript(mb << 20);
        let edits = spread_edits(&doc);
        assert!(apply_edits(&doc, &edits).is_ok());
        group.throughput(Throughput::Bytes(doc.len() as u64));
        group.bench_with_input(BenchmarkId::new("100_edits", format!("{mb}MB")), &doc, |b, doc| {
            b.iter(|| apply_edits(black_box(doc), black_box(&edits)).unwrap())
        });

        let lines = doc.lines().count();
        let exact = [Edit::new(format!("段落{}：", lines / 2), "第一段：")];
        group.bench_with_input(BenchmarkId::new("one_edit/exact", format!("{mb}MB")), &doc, |b, doc| {
            b.iter(|| apply_edits(black_box(doc), black_box(&exact)).unwrap())
        });

        let missing = [Edit::new("A zebra crossed the frozen canal at dawn.\n", "x\n")];
        assert!(apply_edits(&doc, &missing).is_err());
        group.bench_with_input(BenchmarkId::new("one_edit/no_match", format!("{mb}MB")), &doc, |b, doc| {
            b.iter(|| apply_edits(black_box(doc), black_box(&missing)).unwrap_err())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
