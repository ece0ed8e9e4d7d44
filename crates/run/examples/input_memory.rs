//! Peak memory of reading a large input (issue 19: "memory while reading stays
//! proportional to the set, no second copy of the file").
//!
//! ```text
//! cargo run --release -p privset-run --example input_memory -- gen DIR 16777216
//! cargo run --release -p privset-run --example input_memory -- read DIR/ids.parquet
//! ```
//!
//! `synth N` builds the same N rows from memory (no file), the floor to compare with.
//! `gen` writes `ids.csv`, `ids.csv.zst` and `ids.parquet` (columns `id`, `spend`) with
//! N rows; `read` reads one file as a party's input (the id and the value column) and
//! prints the rows, the time and this process's peak RSS. scripts/input_memory.sh runs
//! both for every format; docs/inputs.md has the figures.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use privset_protocols::input::DuplicatePolicy;
use privset_run::keys::Keys;
use privset_run::source::{InputSpec, read_input};

fn peak_rss_mib() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we pass.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn id(i: u64) -> String {
    format!("user{i:09}@example.com")
}

fn generate(dir: &Path, n: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let mut csv = BufWriter::new(std::fs::File::create(dir.join("ids.csv")).unwrap());
    let zst = std::fs::File::create(dir.join("ids.csv.zst")).unwrap();
    let mut zst = zstd::stream::write::Encoder::new(zst, 3)
        .unwrap()
        .auto_finish();
    writeln!(csv, "id,spend").unwrap();
    writeln!(zst, "id,spend").unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("spend", DataType::Int64, false),
    ]));
    let pq = std::fs::File::create(dir.join("ids.parquet")).unwrap();
    let mut pq = parquet::arrow::ArrowWriter::try_new(pq, schema.clone(), None).unwrap();
    let chunk = 1 << 16;
    let mut start = 0;
    while start < n {
        let end = (start + chunk).min(n);
        let ids: Vec<String> = (start..end).map(id).collect();
        let spend: Vec<i64> = (start..end).map(|i| (i % 1000) as i64).collect();
        for (i, s) in ids.iter().zip(&spend) {
            writeln!(csv, "{i},{s}").unwrap();
            writeln!(zst, "{i},{s}").unwrap();
        }
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(ids)) as ArrayRef,
                Arc::new(Int64Array::from(spend)),
            ],
        )
        .unwrap();
        pq.write(&batch).unwrap();
        start = end;
    }
    pq.close().unwrap();
    csv.flush().unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("gen") => generate(Path::new(&args[2]), args[3].parse().unwrap()),
        Some("read") => {
            let path = Path::new(&args[2]);
            let keys = Keys::single("id");
            let values = vec!["spend".to_string()];
            let t = Instant::now();
            let d = read_input(
                path,
                &InputSpec {
                    keys: &keys,
                    values: &values,
                    segment: None,
                },
                DuplicatePolicy::Error,
                u32::MAX as u64,
            )
            .unwrap();
            let file_mib = std::fs::metadata(path).unwrap().len() as f64 / (1 << 20) as f64;
            // The dataset's own size: each identifier's bytes and Vec header, the values.
            let set_mib = d.ids.iter().map(|i| i.capacity() + 24).sum::<usize>() as f64
                / (1 << 20) as f64
                + (d.columns.len() * d.ids.len() * 8) as f64 / (1 << 20) as f64;
            println!(
                "{}: {} rows, file {file_mib:.0} MiB, dataset {set_mib:.0} MiB, read in {:.1} s, peak RSS {:.0} MiB",
                path.display(),
                d.ids.len(),
                t.elapsed().as_secs_f64(),
                peak_rss_mib()
            );
        }
        Some("synth") => {
            // The same rows built straight from memory, no file: the floor that reading
            // a file is compared with.
            let n: u64 = args[2].parse().unwrap();
            let t = Instant::now();
            let rows = (0..n).map(|i| privset_protocols::input::Row {
                line: i + 2,
                id: id(i).into_bytes(),
                values: vec![(i % 1000).to_string()],
                segment: None,
            });
            let d = privset_protocols::input::build_dataset(
                rows,
                &["spend".to_string()],
                DuplicatePolicy::Error,
                u32::MAX as u64,
            )
            .unwrap();
            println!(
                "in memory, no file: {} rows, built in {:.1} s, peak RSS {:.0} MiB",
                d.ids.len(),
                t.elapsed().as_secs_f64(),
                peak_rss_mib()
            );
        }
        _ => eprintln!("usage: input_memory gen DIR N | read FILE | synth N"),
    }
}
