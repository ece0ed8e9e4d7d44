//! Issue 19 end to end, real processes over an exchange directory: psi and pi-sum give
//! the same answer from CSV, gzip CSV, zstd CSV, Parquet, Arrow IPC file and stream;
//! multi-column keys, normalisation and hashing through the flags; Parquet output rows;
//! clear errors for a missing column or a wrong type.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

const BIN: &str = env!("CARGO_BIN_EXE_privset");

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("privset-cli-inputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs two parties of `op` over a fresh exchange directory; `a` and `b` are each
/// party's own flags (role, input, columns). Returns both outputs.
fn pair(dir: &Path, op: &str, tag: &str, a: &[String], b: &[String]) -> (Output, Output) {
    let ex = dir.join(format!("exchange-{tag}"));
    let run = |own: &[String], role: &str| {
        let mut c = Command::new(BIN);
        c.arg(op)
            .args(own)
            .args(["--exchange-dir", ex.to_str().unwrap()])
            .arg("--output")
            .arg(dir.join(format!("{tag}-{role}.json")))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if op == "pi-sum" {
            c.args(["--he-modulus-bits", "1024"]);
        }
        c.spawn().unwrap()
    };
    let x = run(a, "a");
    let y = run(b, "b");
    (x.wait_with_output().unwrap(), y.wait_with_output().unwrap())
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// P2's table: ids and spends; P1's: ids only. Returns (cardinality, sum).
fn tables(n1: u64, n2: u64, overlap: u64) -> (RecordBatch, RecordBatch, u64, u64) {
    let p1: Vec<String> = (0..n1).map(|i| format!("user{i}@example.com")).collect();
    let mut ids = Vec::new();
    let mut spend = Vec::new();
    let mut sum = 0;
    for j in 0..n2 {
        let i = if j < overlap { j } else { n1 + j };
        let v = (j * 7919) % 1000;
        if j < overlap {
            sum += v;
        }
        ids.push(format!("user{i}@example.com"));
        spend.push(v as i64);
    }
    let b1 = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "email",
            arrow_schema::DataType::Utf8,
            false,
        )])),
        vec![Arc::new(StringArray::from(p1)) as ArrayRef],
    )
    .unwrap();
    let b2 = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("id", arrow_schema::DataType::Utf8, false),
            Field::new("spend", arrow_schema::DataType::Int64, false),
        ])),
        vec![
            Arc::new(StringArray::from(ids)) as ArrayRef,
            Arc::new(Int64Array::from(spend)),
        ],
    )
    .unwrap();
    (b1, b2, overlap, sum)
}

/// A cell as CSV text (the test tables hold strings and integers only; null is empty).
fn cell_text(a: &ArrayRef, i: usize) -> String {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int32Type, Int64Type, UInt64Type};
    if a.is_null(i) {
        return String::new();
    }
    match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().value(i).to_string(),
        DataType::Int32 => a.as_primitive::<Int32Type>().value(i).to_string(),
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i).to_string(),
        DataType::UInt64 => a.as_primitive::<UInt64Type>().value(i).to_string(),
        DataType::Float64 => a.as_primitive::<Float64Type>().value(i).to_string(),
        t => panic!("no text for {t}"),
    }
}

fn csv_of(b: &RecordBatch) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let s = b.schema();
    w.write_record(s.fields().iter().map(|f| f.name().as_str()))
        .unwrap();
    for i in 0..b.num_rows() {
        let rec: Vec<String> = b.columns().iter().map(|c| cell_text(c, i)).collect();
        w.write_record(&rec).unwrap();
    }
    w.into_inner().unwrap()
}

/// Writes `b` as `format` (csv, gz, zst, parquet, arrow, arrows) to `dir/name.format`.
fn write(dir: &Path, name: &str, format: &str, b: &RecordBatch) -> PathBuf {
    let path = dir.join(format!("{name}.{format}"));
    let bytes = match format {
        "csv" => csv_of(b),
        "gz" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&csv_of(b)).unwrap();
            e.finish().unwrap()
        }
        "zst" => zstd::encode_all(&csv_of(b)[..], 3).unwrap(),
        "parquet" => {
            let mut out = Vec::new();
            let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, b.schema(), None).unwrap();
            w.write(b).unwrap();
            w.close().unwrap();
            out
        }
        "arrow" => {
            let mut out = Vec::new();
            let mut w = arrow_ipc::writer::FileWriter::try_new(&mut out, &b.schema()).unwrap();
            w.write(b).unwrap();
            w.finish().unwrap();
            drop(w);
            out
        }
        "arrows" => {
            let mut out = Vec::new();
            let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, &b.schema()).unwrap();
            w.write(b).unwrap();
            w.finish().unwrap();
            drop(w);
            out
        }
        _ => unreachable!(),
    };
    std::fs::write(&path, bytes).unwrap();
    path
}

fn read_parquet_column(path: &Path, column: usize) -> Vec<String> {
    let f = std::fs::File::open(path).unwrap();
    let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap();
    let mut out = Vec::new();
    for b in r {
        let b = b.unwrap();
        for i in 0..b.num_rows() {
            out.push(cell_text(b.column(column), i));
        }
    }
    out.sort();
    out
}

#[test]
fn psi_and_pi_sum_give_the_same_answer_from_every_format() {
    let dir = scratch("formats");
    let (b1, b2, card, sum) = tables(60, 50, 20);
    for format in ["csv", "gz", "zst", "parquet", "arrow", "arrows"] {
        let p1 = write(&dir, "p1", format, &b1);
        let p2 = write(&dir, "p2", format, &b2);
        let input = |p: &Path| p.display().to_string();

        // psi, the receiver writing the intersection as Parquet.
        let rows = dir.join(format!("psi-{format}.parquet"));
        let (r, s) = pair(
            &dir,
            "psi",
            &format!("psi-{format}"),
            &[
                strings(&[
                    "--role",
                    "receiver",
                    "--input",
                    &input(&p1),
                    "--id-column",
                    "email",
                ]),
                vec!["--output-rows".into(), rows.display().to_string()],
            ]
            .concat(),
            &strings(&[
                "--role",
                "sender",
                "--input",
                &input(&p2),
                "--id-column",
                "id",
            ]),
        );
        assert!(
            r.status.success() && s.status.success(),
            "{format}: {} {}",
            stderr(&r),
            stderr(&s)
        );
        let res = json(&dir.join(format!("psi-{format}-a.json")));
        assert_eq!(res["cardinality"], card, "{format}");
        let mut want: Vec<String> = (0..card).map(|i| format!("user{i}@example.com")).collect();
        want.sort();
        assert_eq!(read_parquet_column(&rows, 0), want, "{format}");

        // pi-sum: the same cardinality and sum.
        let (a, b) = pair(
            &dir,
            "pi-sum",
            &format!("pisum-{format}"),
            &strings(&[
                "--role",
                "p1",
                "--input",
                &input(&p1),
                "--id-column",
                "email",
            ]),
            &strings(&[
                "--role",
                "p2",
                "--input",
                &input(&p2),
                "--id-column",
                "id",
                "--value-column",
                "spend",
            ]),
        );
        assert!(
            a.status.success() && b.status.success(),
            "{format}: {} {}",
            stderr(&a),
            stderr(&b)
        );
        let res = json(&dir.join(format!("pisum-{format}-b.json")));
        assert_eq!(res["cardinality"], card, "{format}: {res}");
        assert_eq!(res["sums"][0], sum, "{format}: {res}");
    }
}

#[test]
fn multi_column_keys_and_normalisation_through_the_flags() {
    let dir = scratch("keys");
    // The receiver's CSV and the sender's Parquet hold the same two people, written
    // differently (case, spaces, column order); a third person only on each side.
    std::fs::write(
        dir.join("a.csv"),
        "first_name,last_name,dob,phone\nAnn,Lee,1990-01-02,020 7946 0958\n Bo ,Kim,1985-05-06,(020) 7946-0959\nCy,Ng,1970-07-07,020 7946 0000\n",
    )
    .unwrap();
    let s = |v: &[&str]| Arc::new(StringArray::from(v.to_vec())) as ArrayRef;
    let b = RecordBatch::try_new(
        Arc::new(Schema::new(
            ["dob", "last_name", "first_name", "phone"]
                .map(|n| Field::new(n, arrow_schema::DataType::Utf8, false))
                .to_vec(),
        )),
        vec![
            s(&["1990-01-02", "1985-05-06", "2000-01-01"]),
            s(&["LEE", "kim", "Doe"]),
            s(&["ann", "BO", "Di"]),
            s(&["+44 20 7946 0958", "0044 20 7946 0959", "+44 20 7946 1111"]),
        ],
    )
    .unwrap();
    let bp = write(&dir, "b", "parquet", &b);
    let a = dir.join("a.csv").display().to_string();
    let bp = bp.display().to_string();
    let run = |tag: &str, cols: &str, extra: &[&str]| -> (u64, PathBuf) {
        let rows = dir.join(format!("{tag}.csv"));
        let mut ra = strings(&["--role", "receiver", "--input", &a, "--id-column", cols]);
        ra.extend(strings(extra));
        ra.extend(["--output-rows".into(), rows.display().to_string()]);
        let mut sb = strings(&["--role", "sender", "--input", &bp, "--id-column", cols]);
        sb.extend(strings(extra));
        let (r, s) = pair(&dir, "psi", tag, &ra, &sb);
        assert!(
            r.status.success() && s.status.success(),
            "{tag}: {} {}",
            stderr(&r),
            stderr(&s)
        );
        let c = json(&dir.join(format!("{tag}-a.json")))["cardinality"]
            .as_u64()
            .unwrap();
        (c, rows)
    };
    let cols = "first_name,last_name,dob";
    assert_eq!(run("trim", cols, &[]).0, 0);
    let (c, rows) = run("lower", cols, &["--normalize", "lower"]);
    assert_eq!(c, 2);
    // The rows give the key back as its columns.
    let text = std::fs::read_to_string(&rows).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "ann,lee,1990-01-02",
            "bo,kim,1985-05-06",
            "first_name,last_name,dob"
        ]
    );
    assert_eq!(
        run(
            "hashed",
            cols,
            &["--normalize", "lower", "--hash-ids", "sha256"]
        )
        .0,
        2
    );
    assert_eq!(run("phone-raw", "phone", &[]).0, 0);
    let (c, rows) = run(
        "phone",
        "phone",
        &["--normalize", "phone-e164", "--phone-region", "GB"],
    );
    assert_eq!(c, 2);
    let text = std::fs::read_to_string(&rows).unwrap();
    assert!(
        text.contains("+442079460958") && text.contains("+442079460959"),
        "{text}"
    );
}

#[test]
fn a_missing_column_a_wrong_type_and_a_corrupt_file_are_clear_errors() {
    let dir = scratch("errors");
    let (_, b2, _, _) = tables(5, 5, 2);
    let p2 = write(&dir, "p2", "parquet", &b2).display().to_string();
    let run = |args: &[&str]| {
        let mut c = Command::new(BIN);
        c.args(["pi-sum", "--role", "p2", "--exchange-dir"])
            .arg(dir.join("ex"))
            .arg("--output")
            .arg(dir.join("out.json"))
            .args(args);
        c.output().unwrap()
    };
    let o = run(&[
        "--input",
        &p2,
        "--id-column",
        "email",
        "--value-column",
        "spend",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no column named \"email\" (columns: id, spend)"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "--input",
        &p2,
        "--id-column",
        "spend",
        "--value-column",
        "id",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("column \"id\" has type Utf8; a value column must be integers"),
        "{}",
        stderr(&o)
    );
    let bad = dir.join("bad.parquet");
    std::fs::write(&bad, b"PAR1\x00\x01\x02garbagePAR1").unwrap();
    let o = run(&[
        "--input",
        bad.to_str().unwrap(),
        "--id-column",
        "id",
        "--value-column",
        "spend",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a readable Parquet file"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "--input",
        &p2,
        "--id-column",
        "id",
        "--value-column",
        "spend",
        "--normalize",
        "upper",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
