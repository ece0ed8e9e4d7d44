//! The input reader over every format: CSV, gzip and zstd CSV, Parquet, Arrow IPC file
//! and stream give the same dataset; multi-column keys, normalisations and hashing;
//! clear errors (never a panic) for missing columns, wrong types and corrupt files.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use privset_protocols::input::{Dataset, DuplicatePolicy};
use privset_run::keys::Keys;
use privset_run::source::{Format, InputSpec, read_input};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("privset-inputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A table of string columns (`None` cells are nulls), optionally one integer column.
struct Table {
    names: Vec<&'static str>,
    columns: Vec<ArrayRef>,
}

impl Table {
    fn strings(names: &[&'static str], rows: &[&[Option<&str>]]) -> Self {
        let columns = (0..names.len())
            .map(|c| Arc::new(rows.iter().map(|r| r[c]).collect::<StringArray>()) as ArrayRef)
            .collect();
        Self {
            names: names.to_vec(),
            columns,
        }
    }

    fn with(mut self, name: &'static str, column: ArrayRef) -> Self {
        self.names.push(name);
        self.columns.push(column);
        self
    }

    fn batch(&self) -> RecordBatch {
        let schema = Schema::new(
            self.names
                .iter()
                .zip(&self.columns)
                .map(|(n, c)| Field::new(*n, c.data_type().clone(), true))
                .collect::<Vec<_>>(),
        );
        RecordBatch::try_new(Arc::new(schema), self.columns.clone()).unwrap()
    }

    fn csv(&self) -> Vec<u8> {
        let b = self.batch();
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&self.names).unwrap();
        for i in 0..b.num_rows() {
            let rec: Vec<String> = self.columns.iter().map(|c| cell_text(c, i)).collect();
            w.write_record(&rec).unwrap();
        }
        w.into_inner().unwrap()
    }

    /// Writes the table in `format` to `dir/name` and returns the path.
    fn write(&self, dir: &Path, name: &str, format: Format) -> PathBuf {
        let path = dir.join(name);
        let bytes = match format {
            Format::Csv => self.csv(),
            Format::CsvGzip => {
                let mut e =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(&self.csv()).unwrap();
                e.finish().unwrap()
            }
            Format::CsvZstd => zstd::encode_all(&self.csv()[..], 3).unwrap(),
            Format::Parquet => {
                let b = self.batch();
                let mut out = Vec::new();
                let mut w =
                    parquet::arrow::ArrowWriter::try_new(&mut out, b.schema(), None).unwrap();
                w.write(&b).unwrap();
                w.close().unwrap();
                out
            }
            Format::ArrowFile => {
                let b = self.batch();
                let mut out = Vec::new();
                let mut w = arrow_ipc::writer::FileWriter::try_new(&mut out, &b.schema()).unwrap();
                w.write(&b).unwrap();
                w.finish().unwrap();
                drop(w);
                out
            }
            Format::ArrowStream => {
                let b = self.batch();
                let mut out = Vec::new();
                let mut w =
                    arrow_ipc::writer::StreamWriter::try_new(&mut out, &b.schema()).unwrap();
                w.write(&b).unwrap();
                w.finish().unwrap();
                drop(w);
                out
            }
        };
        std::fs::write(&path, bytes).unwrap();
        path
    }
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

const FORMATS: [(Format, &str); 6] = [
    (Format::Csv, "t.csv"),
    // Names that do not say the format: detection is by content.
    (Format::CsvGzip, "t-gzip.dat"),
    (Format::CsvZstd, "t.csv.zst"),
    (Format::Parquet, "t-parquet.bin"),
    (Format::ArrowFile, "t.arrow"),
    (Format::ArrowStream, "t.arrows"),
];

fn read(path: &Path, keys: &Keys, values: &[&str]) -> Result<Dataset, privset_run::Failure> {
    let values: Vec<String> = values.iter().map(|s| s.to_string()).collect();
    read_input(
        path,
        &InputSpec {
            keys,
            values: &values,
            segment: None,
        },
        DuplicatePolicy::Error,
        u32::MAX as u64,
    )
}

fn sorted(d: &Dataset) -> Vec<(Vec<u8>, Vec<u64>)> {
    let mut v: Vec<_> = d
        .ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.clone(), d.columns.iter().map(|c| c[i]).collect()))
        .collect();
    v.sort();
    v
}

#[test]
fn every_format_gives_the_same_dataset() {
    let dir = scratch("formats");
    let t = Table::strings(
        &["id", "spend"],
        &[
            &[Some(" alice "), Some("10")],
            &[Some("bob"), Some("20")],
            &[Some("carol, jr"), Some("30")],
        ],
    );
    let keys = Keys::single("id");
    let mut answers = Vec::new();
    for (format, name) in FORMATS {
        let path = t.write(&dir, name, format);
        assert_eq!(Format::detect(&path).unwrap(), format, "{name}");
        let d = read(&path, &keys, &["spend"]);
        // Parquet and Arrow hold the value as a string here: refused, naming it.
        if matches!(
            format,
            Format::Parquet | Format::ArrowFile | Format::ArrowStream
        ) {
            let e = d.unwrap_err().message;
            assert!(
                e.contains("\"spend\"") && e.contains("Utf8") && e.contains("integers"),
                "{e}"
            );
            let d = read(&path, &keys, &[]).unwrap();
            answers.push(sorted(&d).into_iter().map(|(id, _)| id).collect::<Vec<_>>());
        } else {
            let d = d.unwrap();
            assert_eq!(
                sorted(&d),
                vec![
                    (b"alice".to_vec(), vec![10]),
                    (b"bob".to_vec(), vec![20]),
                    (b"carol, jr".to_vec(), vec![30]),
                ]
            );
            answers.push(sorted(&d).into_iter().map(|(id, _)| id).collect());
        }
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");

    // Integer value columns from Parquet and Arrow: int32 and uint64.
    let t = Table::strings(
        &["id"],
        &[&[Some("alice")], &[Some("bob")], &[Some("carol, jr")]],
    )
    .with("spend", Arc::new(Int32Array::from(vec![10, 20, 30])))
    .with("big", Arc::new(UInt64Array::from(vec![1u64, 2, 3])));
    for (format, name) in FORMATS {
        let path = t.write(&dir, &format!("int-{name}"), format);
        let d = read(&path, &keys, &["spend", "big"]).unwrap();
        assert_eq!(
            sorted(&d),
            vec![
                (b"alice".to_vec(), vec![10, 1]),
                (b"bob".to_vec(), vec![20, 2]),
                (b"carol, jr".to_vec(), vec![30, 3]),
            ],
            "{name}"
        );
    }
}

#[test]
fn missing_columns_wrong_types_nulls_and_corrupt_files_are_clear_errors() {
    let dir = scratch("errors");
    let t = Table::strings(&["id", "v"], &[&[Some("a"), Some("1")], &[None, Some("2")]])
        .with("n", Arc::new(Int32Array::from(vec![1, -2])));
    for (format, name) in FORMATS {
        let path = t.write(&dir, name, format);
        let e = read(&path, &Keys::single("email"), &[])
            .unwrap_err()
            .message;
        assert!(
            e.contains("no column named \"email\"") && e.contains("id, v, n"),
            "{name}: {e}"
        );
        if matches!(
            format,
            Format::Parquet | Format::ArrowFile | Format::ArrowStream
        ) {
            // A null identifier: row 2 (the first data row is row 1), column "id".
            let e = read(&path, &Keys::single("id"), &[]).unwrap_err().message;
            assert!(e.contains("row 2, column \"id\""), "{name}: {e}");
            // A negative value names the row and column.
            let e = read(&path, &Keys::single("v"), &["n"]).unwrap_err().message;
            assert!(e.contains("row 2") && e.contains("\"n\""), "{name}: {e}");
        } else {
            let e = read(&path, &Keys::single("id"), &[]).unwrap_err().message;
            assert!(e.contains("line 3: empty identifier"), "{name}: {e}");
        }
    }
    // A float column cannot be an identifier.
    let t = Table::strings(&["id"], &[&[Some("a")]]).with(
        "f",
        Arc::new(arrow_array::Float64Array::from(vec![1.5])) as ArrayRef,
    );
    let path = t.write(&dir, "f.parquet", Format::Parquet);
    let e = read(&path, &Keys::single("f"), &[]).unwrap_err().message;
    assert!(e.contains("column \"f\" has type Float64"), "{e}");
    // Corrupt files: a Parquet magic then garbage; a valid file cut short; the same
    // for Arrow; a truncated gzip stream.
    let good = std::fs::read(t.write(&dir, "g.parquet", Format::Parquet)).unwrap();
    for (name, bytes) in [
        (
            "garbage.parquet",
            b"PAR1 this is not parquet at all PAR1".to_vec(),
        ),
        ("cut.parquet", good[..good.len() / 2].to_vec()),
        ("flipped.parquet", {
            let mut b = good.clone();
            for x in &mut b[8..good.len() - 12] {
                *x ^= 0x5a;
            }
            b
        }),
        ("garbage.arrow", b"ARROW1\0\0garbage".to_vec()),
        (
            "garbage.arrows",
            vec![0xff, 0xff, 0xff, 0xff, 9, 0, 0, 0, 1, 2, 3],
        ),
        ("cut.csv.gz", {
            let g = std::fs::read(t.write(&dir, "g.csv.gz", Format::CsvGzip)).unwrap();
            g[..g.len() - 6].to_vec()
        }),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let r = std::panic::catch_unwind(|| read(&path, &Keys::single("id"), &[]));
        let e = r
            .unwrap_or_else(|_| panic!("{name}: panicked"))
            .unwrap_err();
        assert!(e.message.contains(name), "{name}: {}", e.message);
    }
}

fn keys(cols: &[&str], normalize: &[&str], region: Option<&str>, hash: Option<&str>) -> Keys {
    Keys::new(
        cols.iter().map(|s| s.to_string()).collect(),
        &normalize.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        region,
        hash,
    )
    .unwrap()
}

/// The identifiers of the two files under `keys`, for comparing what matches.
fn both(a: &Path, b: &Path, k: &Keys) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut x = read(a, k, &[]).unwrap().ids;
    let mut y = read(b, k, &[]).unwrap().ids;
    x.sort();
    y.sort();
    (x, y)
}

#[test]
fn multi_column_keys_normalisation_and_hashing_match_across_formats() {
    let dir = scratch("keys");
    // Party A (CSV) and party B (Parquet) hold the same people, written differently.
    let a = Table::strings(
        &["first", "last", "dob", "email", "phone"],
        &[
            &[
                Some("Ann"),
                Some("Lee"),
                Some("1990-01-02"),
                Some(" Ann.Lee@Example.com"),
                Some("020 7946 0958"),
            ],
            &[
                Some("Bo"),
                Some("Kim"),
                Some("1985-05-06"),
                Some("bo@kim.org"),
                Some("+44 (20) 7946-0959"),
            ],
        ],
    )
    .write(&dir, "a.csv", Format::Csv);
    let b = Table::strings(
        &["phone", "dob", "last", "first", "email"],
        &[
            &[
                Some("+442079460958"),
                Some("1990-01-02"),
                Some("LEE "),
                Some(" ann"),
                Some("ann.lee@example.COM "),
            ],
            &[
                Some("0044 20 7946 0959"),
                Some("1985-05-06"),
                Some("kim"),
                Some("BO"),
                Some("BO@KIM.ORG"),
            ],
        ],
    )
    .write(&dir, "b.parquet", Format::Parquet);

    // Trim only: the names differ in case, nothing matches.
    let k = keys(&["first", "last", "dob"], &["trim"], None, None);
    let (x, y) = both(&a, &b, &k);
    assert!(x.iter().all(|i| !y.contains(i)));
    // Lower-cased: both people match, whatever the column order in the files.
    let k = keys(&["first", "last", "dob"], &["lower"], None, None);
    let (x, y) = both(&a, &b, &k);
    assert_eq!(x, y);
    assert_eq!(k.split(&x[0]).len(), 3);
    // One normalisation per column.
    let k = keys(
        &["first", "last", "dob"],
        &["lower", "lower", "none"],
        None,
        None,
    );
    assert_eq!(both(&a, &b, &k).0, both(&a, &b, &k).1);
    // E-mail: trimmed and lower-cased.
    let (x, y) = both(&a, &b, &keys(&["email"], &["email"], None, None));
    assert_eq!(x, y);
    assert_eq!(x[0], b"ann.lee@example.com");
    let (x, y) = both(&a, &b, &keys(&["email"], &["trim"], None, None));
    assert!(x.iter().all(|i| !y.contains(i)));
    // Phones: E.164 with a default region for A's national number.
    let k = keys(&["phone"], &["phone-e164"], Some("GB"), None);
    let (x, y) = both(&a, &b, &k);
    assert_eq!(x, y);
    assert_eq!(x, [b"+442079460958".to_vec(), b"+442079460959".to_vec()]);
    // Without a region, A's national number is an error naming the line and column.
    let e = read(&a, &keys(&["phone"], &["phone-e164"], None, None), &[]).unwrap_err();
    assert!(
        e.message.contains("line 2") && e.message.contains("--phone-region"),
        "{}",
        e.message
    );
    assert_eq!(e.line, Some(2));
    // An e-mail column that holds something else: the line and the cell.
    let e = read(&a, &keys(&["first"], &["email"], None, None), &[]).unwrap_err();
    assert!(
        e.message.contains("line 2: not an e-mail address") && e.message.contains("Ann"),
        "{}",
        e.message
    );
    // Hashed: 64 hex characters, still matching.
    let k = keys(&["first", "last", "dob"], &["lower"], None, Some("sha256"));
    let (x, y) = both(&a, &b, &k);
    assert_eq!(x, y);
    assert!(
        x.iter()
            .all(|i| i.len() == 64 && i.iter().all(u8::is_ascii_hexdigit))
    );
}

#[test]
fn dictionary_columns_read_as_their_values() {
    let dir = scratch("dict");
    let ids: arrow_array::DictionaryArray<arrow_array::types::Int32Type> =
        vec!["x", "y", "x2"].into_iter().collect();
    let schema = Arc::new(Schema::new(vec![Field::new(
        "id",
        DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
        false,
    )]));
    let b = RecordBatch::try_new(schema, vec![Arc::new(ids)]).unwrap();
    let path = dir.join("d.arrow");
    let mut out = Vec::new();
    let mut w = arrow_ipc::writer::FileWriter::try_new(&mut out, &b.schema()).unwrap();
    w.write(&b).unwrap();
    w.finish().unwrap();
    drop(w);
    std::fs::write(&path, out).unwrap();
    let mut got = read(&path, &Keys::single("id"), &[]).unwrap().ids;
    got.sort();
    assert_eq!(got, [b"x".to_vec(), b"x2".to_vec(), b"y".to_vec()]);
}
