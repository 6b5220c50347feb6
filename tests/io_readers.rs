//! Data I/O: round trips, and every malformed input ends in an error naming the file and the problem.

use std::io::Write;
use std::path::{Path, PathBuf};

use rmld::io::*;
use rmld::{Error, Result};

/// The error's text; fails the test if `r` is `Ok`.
fn err<T: std::fmt::Debug>(r: Result<T>) -> String {
    r.expect_err("expected an error").to_string()
}

/// Asserts `r` failed with a message naming `path`'s file and containing every needle.
fn assert_fails<T: std::fmt::Debug>(r: Result<T>, path: &Path, needles: &[&str]) {
    let text = err(r);
    eprintln!("expected error: {text}"); // shown with --nocapture, to review the wording
    let name = path.file_name().unwrap().to_string_lossy();
    assert!(
        text.contains(&*name),
        "message does not name {name}: {text}"
    );
    for needle in needles {
        assert!(
            text.to_lowercase().contains(&needle.to_lowercase()),
            "no {needle:?} in: {text}"
        );
    }
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// An IDX file built by hand (independent of the writer under test).
fn idx(magic: u32, dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = magic.to_be_bytes().to_vec();
    dims.iter()
        .for_each(|d| out.extend_from_slice(&d.to_be_bytes()));
    out.extend_from_slice(data);
    out
}

/// An NPY v1.0 file built by hand from a header dict and raw data.
fn npy(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut header = dict.to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn put(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn idx_round_trip_raw_and_gz() {
    let dir = tempfile::tempdir().unwrap();
    let pixels: Vec<u8> = (0..2 * 3 * 4).map(|i| (i * 10) as u8).collect();
    for name in ["imgs-idx3-ubyte", "imgs-idx3-ubyte.gz"] {
        let path = dir.path().join(name);
        write_idx_images(&path, 2, 3, 4, &pixels).unwrap();
        let is_gz = std::fs::read(&path).unwrap().starts_with(&[0x1f, 0x8b]);
        assert_eq!(is_gz, name.ends_with(".gz"));
        let back = read_idx_images(&path).unwrap();
        assert_eq!((back.n, back.height, back.width), (2, 3, 4));
        assert_eq!(back.pixels, pixels);
        let labels_path = dir.path().join(name.replace("imgs-idx3", "labs-idx1"));
        write_idx_labels(&labels_path, &[7, 3]).unwrap();
        assert_eq!(read_idx_labels(&labels_path).unwrap(), vec![7, 3]);
    }
    // Gzip is detected by content: a raw file named .gz still loads.
    let raw = put(dir.path(), "raw.gz", &idx(0x803, &[1, 1, 2], &[5, 6]));
    assert_eq!(read_idx_images(&raw).unwrap().pixels, vec![5, 6]);
}

#[test]
fn idx_truncated_at_several_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let full = idx(0x803, &[2, 3, 4], &[1; 24]);
    for cut in [0, 1, 3, 4, 7, 15, 16, 17, 30, 39] {
        for zipped in [false, true] {
            let bytes = if zipped {
                gz(&full[..cut])
            } else {
                full[..cut].to_vec()
            };
            let path = put(dir.path(), &format!("cut{cut}-{zipped}-idx3-ubyte"), &bytes);
            let problem = if cut == 0 { "empty" } else { "truncated" };
            assert_fails(read_idx_images(&path), &path, &[problem]);
        }
    }
    // A gzip stream cut short (the deflate data or its trailer missing).
    let zipped = gz(&full);
    for cut in [zipped.len() - 4, zipped.len() / 2, 12] {
        let path = put(dir.path(), &format!("short{cut}.gz"), &zipped[..cut]);
        assert_fails(read_idx_images(&path), &path, &["gzip"]);
    }
}

#[test]
fn idx_garbage_and_corrupt_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = put(
        dir.path(),
        "garbage-idx3-ubyte.gz",
        b"this is certainly not gzip data",
    );
    assert_fails(read_idx_images(&garbage), &garbage, &["magic", "not gzip"]);
    let mut zipped = gz(&idx(0x803, &[4, 8, 8], &[9; 256]));
    let middle = zipped.len() / 2;
    zipped[middle..middle + 4].copy_from_slice(&[0xff, 0x00, 0xff, 0x00]);
    let corrupt = put(dir.path(), "corrupt.gz", &zipped);
    assert_fails(read_idx_images(&corrupt), &corrupt, &["gzip"]);
    let mut bad_crc = gz(&idx(0x803, &[1, 2, 2], &[1, 2, 3, 4]));
    let n = bad_crc.len();
    bad_crc[n - 8] ^= 0xff;
    let bad_crc = put(dir.path(), "crc.gz", &bad_crc);
    assert_fails(read_idx_images(&bad_crc), &bad_crc, &["gzip"]);
}

#[test]
fn idx_wrong_magic_type_dims_and_trailing_data() {
    let dir = tempfile::tempdir().unwrap();
    let labels = put(dir.path(), "labels.idx", &idx(0x801, &[2], &[1, 2]));
    assert_fails(
        read_idx_images(&labels),
        &labels,
        &["0x00000801", "0x00000803", "labels file"],
    );
    let images = put(dir.path(), "images.idx", &idx(0x803, &[1, 1, 1], &[1]));
    assert_fails(
        read_idx_labels(&images),
        &images,
        &["0x00000803", "0x00000801"],
    );
    let text = put(dir.path(), "text.idx", b"P5 28 28 255");
    assert_fails(read_idx_images(&text), &text, &["magic", "not an IDX file"]);
    let floats = put(dir.path(), "floats.idx", &idx(0xD03, &[1, 1, 1], &[0; 4]));
    assert_fails(
        read_idx_images(&floats),
        &floats,
        &["data type 0x0d", "float"],
    );
    let zero = put(dir.path(), "zero.idx", &idx(0x803, &[0, 28, 28], &[]));
    assert_fails(read_idx_images(&zero), &zero, &["zero"]);
    let trailing = put(dir.path(), "trailing.idx", &idx(0x801, &[2], &[1, 2, 3]));
    assert_fails(read_idx_labels(&trailing), &trailing, &["trailing"]);
}

#[test]
fn idx_header_claiming_a_billion_images_allocates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let liar = idx(0x803, &[1_000_000_000, 28, 28], &[0; 100]);
    // A plain file is known to hold 100 bytes; a gzip'd one is refused from its header alone.
    for (name, bytes, needle) in [
        ("liar-idx3-ubyte", liar.clone(), "truncated"),
        ("liar-idx3-ubyte.gz", gz(&liar), "input limit"),
    ] {
        let path = put(dir.path(), name, &bytes);
        let started = std::time::Instant::now();
        assert_fails(
            read_idx_images(&path),
            &path,
            &[needle, "1000000000 images", "promises"],
        );
        assert!(
            started.elapsed().as_secs() < 2,
            "must fail at once, not allocate gigabytes"
        );
    }
}

#[test]
fn gzip_bombs_stop_at_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let zeros = vec![0u8; 8 << 20];
    let bomb = put(
        dir.path(),
        "bomb-idx3-ubyte.gz",
        &gz(&idx(0x803, &[8 << 10, 32, 32], &zeros)),
    );
    assert!(std::fs::metadata(&bomb).unwrap().len() < 100_000);
    assert_fails(
        read_idx_images_with_limit(&bomb, 1 << 20),
        &bomb,
        &["limit", "RMLD_MAX_INPUT_BYTES"],
    );
    assert_eq!(
        read_idx_images_with_limit(&bomb, 9 << 20).unwrap().n,
        8 << 10
    );
    let header = "{'descr': '|u1', 'fortran_order': False, 'shape': (8192, 1024), }";
    let npy_bomb = put(dir.path(), "bomb.npy.gz", &gz(&npy(header, &zeros)));
    assert_fails(
        read_npy_with_limit(&npy_bomb, 1 << 20),
        &npy_bomb,
        &["limit"],
    );
    let csv_bomb = put(dir.path(), "bomb.csv.gz", &gz(&b"0,0\n".repeat(1 << 20)));
    assert_fails(
        read_csv_with_limit(&csv_bomb, 1 << 20),
        &csv_bomb,
        &["limit"],
    );
}

#[test]
fn bomb_reading_stops_at_the_limit() {
    // 64 concatenated gzip members of 1 MiB of zeros: 64 MiB from about 64 KiB, behind a header
    // that honestly claims it all. The reader must stop inflating just past the 1 MiB limit.
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = gz(&idx(0x803, &[64, 1024, 1024], &[]));
    let member = gz(&vec![0u8; 1 << 20]);
    (0..64).for_each(|_| bytes.extend_from_slice(&member));
    let path = put(dir.path(), "members-idx3-ubyte.gz", &bytes);
    let mut input = rmld::io::Input::open(&path, 1 << 20).unwrap();
    let mut header = [0u8; 16];
    assert_eq!(input.read_up_to(&mut header).unwrap(), 16);
    assert_fails(input.read_payload(64 << 20, "64 images"), &path, &["limit"]);
    assert!(
        input.position() <= (1 << 20) + 1,
        "inflated {} bytes",
        input.position()
    );
    assert_eq!(read_idx_images_with_limit(&path, 65 << 20).unwrap().n, 64);
}

#[test]
fn directory_datasets() {
    let dir = tempfile::tempdir().unwrap();
    let empty = err(Dataset::load(dir.path()));
    assert!(empty.contains("train-images-idx3-ubyte"), "{empty}");
    let d = dir.path();
    write_idx_images(
        &d.join("emnist-x-train-images-idx3-ubyte.gz"),
        3,
        2,
        2,
        &[1; 12],
    )
    .unwrap();
    write_idx_labels(&d.join("emnist-x-train-labels-idx1-ubyte.gz"), &[1, 2, 3]).unwrap();
    write_idx_images(&d.join("emnist-x-test-images-idx3-ubyte"), 1, 2, 2, &[2; 4]).unwrap();
    let train = Dataset::load(d).unwrap();
    assert_eq!(
        (train.n, train.d, train.height, train.full_scale),
        (3, 4, 2, 255.0)
    );
    assert_eq!(train.labels, Some(vec![1, 2, 3]));
    let test = Dataset::load_test_split(d).unwrap().expect("test split");
    assert_eq!((test.n, test.labels), (1, None));
    // The images file given directly finds its sibling labels.
    let direct = Dataset::load(&d.join("emnist-x-train-images-idx3-ubyte.gz")).unwrap();
    assert_eq!(direct.label_count(), Some(3));

    let other = tempfile::tempdir().unwrap();
    write_idx_images(
        &other.path().join("train-images-idx3-ubyte.gz"),
        3,
        2,
        2,
        &[1; 12],
    )
    .unwrap();
    let labels = other.path().join("train-labels-idx1-ubyte.gz");
    write_idx_labels(&labels, &[1, 2]).unwrap();
    assert_fails(
        Dataset::load(other.path()),
        &labels,
        &["2 labels", "3 images", "mismatch"],
    );
    assert!(Dataset::load_test_split(other.path()).unwrap().is_none());
}

#[test]
fn npy_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..=255).collect();
    let u8_path = dir.path().join("u8.npy");
    write_npy_u8(&u8_path, &[4, 64], &bytes).unwrap();
    let a = read_npy(&u8_path).unwrap();
    assert_eq!((a.shape, a.data), (vec![4, 64], Pixels::U8(bytes.clone())));
    let ds = Dataset::load(&u8_path).unwrap();
    assert_eq!(
        (ds.n, ds.d, ds.height, ds.width, ds.full_scale),
        (4, 64, 8, 8, 255.0)
    );

    let floats: Vec<f32> = (0..24).map(|i| i as f32 / 8.0).collect();
    for (name, shape, geometry) in [
        ("f.npy", vec![2, 12], (1, 12)),
        ("f3.npy.gz", vec![2, 3, 4], (3, 4)),
    ] {
        let path = dir.path().join(name);
        write_npy_f32(&path, &shape, &floats).unwrap();
        let a = read_npy(&path).unwrap();
        assert_eq!((&a.shape, &a.data), (&shape, &Pixels::F32(floats.clone())));
        let ds = Dataset::load(&path).unwrap();
        assert_eq!(((ds.height, ds.width), ds.full_scale), (geometry, 2.875));
    }
    let (shape, matrix) = read_npy_matrix_f32(&dir.path().join("f.npy")).unwrap();
    assert_eq!((shape, matrix), (vec![2, 12], floats.clone()));
    let f64_path = put(
        dir.path(),
        "f64.npy",
        &npy(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }",
            &[0.5f64.to_le_bytes(), 0.25f64.to_le_bytes()].concat(),
        ),
    );
    assert_eq!(
        read_npy(&f64_path).unwrap().data,
        Pixels::F32(vec![0.5, 0.25])
    );
    assert_eq!(Dataset::load(&f64_path).unwrap().full_scale, 1.0);

    for (name, labels) in [("l64.npy", true), ("l32.npy", false)] {
        let path = dir.path().join(name);
        if labels {
            write_npy_i64(&path, &[4], &[3, 1, 4, 1]).unwrap();
        } else {
            write_npy_u32(&path, &[4], &[3, 1, 4, 1]).unwrap();
        }
        let ds = Dataset::load(&u8_path)
            .unwrap()
            .with_labels_file(&path)
            .unwrap();
        assert_eq!(ds.label_count(), Some(3));
        assert_eq!(ds.labels, Some(vec![3, 1, 4, 1]));
    }
}

#[test]
fn npy_images_with_one_channel_read_as_images() {
    // Keras keeps grey images as (N, h, w, 1), PyTorch as (N, 1, h, w): the same values.
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<u8> = (0..2 * 3 * 4).map(|v| v as u8).collect();
    let plain = dir.path().join("plain.npy");
    write_npy_u8(&plain, &[2, 3, 4], &values).unwrap();
    let expected = Dataset::load(&plain).unwrap();
    for shape in [[2, 3, 4, 1], [2, 1, 3, 4]] {
        let path = dir.path().join(format!("{shape:?}.npy"));
        write_npy_u8(&path, &shape, &values).unwrap();
        let read = Dataset::load(&path).unwrap();
        assert_eq!(
            (read.n, read.height, read.width, &read.pixels),
            (2, 3, 4, &expected.pixels),
            "{shape:?}"
        );
    }
    let three = dir.path().join("rgb.npy");
    write_npy_u8(&three, &[1, 2, 2, 3], &[0; 12]).unwrap();
    assert_fails(
        Dataset::load(&three),
        &three,
        &["one channel", "[1, 2, 2, 3]"],
    );
}

#[test]
fn npy_malformed() {
    let dir = tempfile::tempdir().unwrap();
    let ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
    let cases: Vec<(&str, Vec<u8>, &[&str])> = vec![
        ("magic.npy", b"\x93NUMPZ\x01\x00".to_vec(), &["magic"]),
        (
            "dict.npy",
            npy(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2}",
                &[],
            ),
            &["header dict"],
        ),
        (
            "keys.npy",
            npy("{'descr': '<f4', 'shape': (2, 2), }", &[]),
            &["header dict", "missing"],
        ),
        (
            "dtype.npy",
            npy(
                "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }",
                &[0; 16],
            ),
            &["dtype", "<c8"],
        ),
        (
            "bigend.npy",
            npy(
                "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                &[0; 4],
            ),
            &["dtype"],
        ),
        (
            "short.npy",
            npy(ok_dict, &f32_bytes(&[1.0; 3])),
            &["truncated", "(2, 2)"],
        ),
        (
            "long.npy",
            npy(ok_dict, &f32_bytes(&[1.0; 5])),
            &["trailing"],
        ),
        (
            "huge.npy",
            npy(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }",
                &[0; 8],
            ),
            // "truncated" (plain), "more than the input limit" (gzip'd): both before reading it.
            &["the header promises"],
        ),
        (
            "nan.npy",
            npy(ok_dict, &f32_bytes(&[1.0, 2.0, f32::NAN, 0.0])),
            &["index 2", "NaN"],
        ),
        (
            "inf.npy",
            npy(ok_dict, &f32_bytes(&[1.0, f32::INFINITY, 0.0, 0.0])),
            &["index 1", "infinite"],
        ),
        (
            "fortran.npy",
            npy(
                "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                &[0; 16],
            ),
            &["fortran_order"],
        ),
        (
            "header.npy",
            npy(ok_dict, &[])[..40].to_vec(),
            &["truncated", "header"],
        ),
        (
            "version.npy",
            b"\x93NUMPY\x09\x00\x10\x00".to_vec(),
            &["version 9"],
        ),
    ];
    for (name, bytes, needles) in cases {
        let path = put(dir.path(), name, &bytes);
        assert_fails(read_npy(&path), &path, needles);
        let gz_path = put(dir.path(), &format!("{name}.gz"), &gz(&bytes));
        assert_fails(read_npy(&gz_path), &gz_path, needles);
    }
    let column = put(
        dir.path(),
        "fortran1d.npy",
        &npy(
            "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 1), }",
            &f32_bytes(&[1.0, 2.0, 3.0]),
        ),
    );
    assert_eq!(read_npy(&column).unwrap().shape, vec![3, 1]);
    let cube = put(
        dir.path(),
        "4d.npy",
        &npy(
            "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 2, 2, 2), }",
            &[0; 8],
        ),
    );
    assert_fails(Dataset::load(&cube), &cube, &["expected shape"]);
    let neg = put(
        dir.path(),
        "neg.npy",
        &npy(
            "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }",
            &(-1i64).to_le_bytes(),
        ),
    );
    assert_fails(read_npy_labels(&neg), &neg, &["negative"]);
    let v3 = [
        b"\x93NUMPY\x03\x00".as_slice(),
        &60u32.to_le_bytes(),
        format!(
            "{:<59}\n",
            "{'descr': '|u1', 'fortran_order': False, 'shape': (2,)}"
        )
        .as_bytes(),
        &[7, 8],
    ]
    .concat();
    let v3 = put(dir.path(), "v3.npy", &v3);
    assert_eq!(read_npy(&v3).unwrap().data, Pixels::U8(vec![7, 8]));
}

#[test]
fn csv_round_trip_and_scales() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ints.csv");
    write_csv(
        &path,
        4,
        &Pixels::U8(vec![0, 16, 3, 4, 5, 6, 7, 8]),
        &[1, 2],
    )
    .unwrap();
    let ds = Dataset::load(&path).unwrap();
    assert_eq!((ds.n, ds.d, ds.height, ds.full_scale), (2, 4, 2, 16.0));
    assert_eq!(ds.pixels, Pixels::U8(vec![0, 16, 3, 4, 5, 6, 7, 8]));
    assert_eq!(ds.labels, Some(vec![1, 2]));
    let bytes = put(
        dir.path(),
        "bytes.csv.gz",
        &gz(b"0,200,17,1\r\n\n255,0,0,0.0\n"),
    );
    let ds = Dataset::load(&bytes).unwrap();
    assert_eq!((ds.d, ds.height, ds.width, ds.full_scale), (3, 1, 3, 255.0));
    let floats = dir.path().join("floats.csv");
    write_csv(
        &floats,
        2,
        &Pixels::F32(vec![0.1, 300.5, -2.0, 1e-7]),
        &[0, 9],
    )
    .unwrap();
    let ds = Dataset::load(&floats).unwrap();
    assert_eq!(ds.pixels, Pixels::F32(vec![0.1, 300.5, -2.0, 1e-7]));
    assert_eq!(ds.full_scale, 300.5);
    let unit = put(dir.path(), "unit.csv", b"0.5,1,0\n");
    assert_eq!(Dataset::load(&unit).unwrap().full_scale, 1.0);
}

#[test]
fn csv_malformed() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], &[&str]); 8] = [
        (
            "ragged.csv",
            b"1,2,3\n4,5,6\n7,8\n",
            &["line 3", "2 fields", "line 1 has 3"],
        ),
        (
            "word.csv",
            b"1,2,3\n4,five,6\n",
            &["line 2, column 2", "not a number", "five"],
        ),
        ("nan.csv", b"1,NaN,3\n", &["line 1, column 2", "not finite"]),
        (
            "inf.csv",
            b"1,2,0\ninf,2,3\n",
            &["line 2, column 1", "not finite"],
        ),
        ("label.csv", b"1,2,3.5\n", &["line 1, column 3", "label"]),
        ("one.csv", b"1\n2\n", &["at least 2"]),
        ("empty.csv", b"\n\n", &["no data rows"]),
        (
            "binary.csv.gz",
            &[0xff, 0xfe, 0x00, 0x12],
            // The loader says so from the head; the CSV reader alone at the first byte.
            &["text (CSV)"],
        ),
    ];
    for (name, bytes, needles) in cases {
        let path = put(dir.path(), name, bytes);
        assert_fails(Dataset::load(&path), &path, needles);
        assert_fails(read_csv(&path), &path, needles);
    }
    let zero = put(dir.path(), "zero", b"");
    assert_fails(Dataset::load(&zero), &zero, &["empty"]);
    let missing = dir.path().join("missing.csv");
    assert_fails(Dataset::load(&missing), &missing, &["cannot open"]);
}

#[test]
fn csv_header_names_the_label_column_and_a_label_first_file_without_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Kaggle's layout: a header, the label first; the same rows as optdigits' layout.
    let kaggle = put(
        dir.path(),
        "kaggle.csv",
        b"label,pixel0,pixel1,pixel2\n3,0,10,200\n1,5,0,255\n",
    );
    let last = put(dir.path(), "last.csv", b"0,10,200,3\n5,0,255,1\n");
    let (a, b) = (read_csv(&kaggle).unwrap(), read_csv(&last).unwrap());
    assert_eq!((a.n, a.d, &a.labels), (2, 3, &vec![3, 1]));
    assert_eq!((&a.pixels, &a.labels), (&b.pixels, &b.labels));
    // pandas' to_csv: numbered columns and `label`, with or without its unnamed index first.
    let indexed = put(
        dir.path(),
        "indexed.csv",
        b",0,1,2,label\n0,0,10,200,3\n1,5,0,255,1\n",
    );
    let plain = put(
        dir.path(),
        "plain.csv",
        b"0,1,2,label\n0,10,200,3\n5,0,255,1\n",
    );
    for file in [&indexed, &plain] {
        let read = read_csv(file).unwrap();
        assert_eq!(
            (read.d, &read.pixels, &read.labels),
            (3, &b.pixels, &b.labels)
        );
    }
    // A stray word in a data row is no header: refused where it stands.
    let stray = put(dir.path(), "stray.csv", b"0,ten,200,3\n5,0,255,1\n");
    assert_fails(read_csv(&stray), &stray, &["line 1, column 2", "ten"]);
    // A header that names no label column: the last is the label.
    let named = put(
        dir.path(),
        "named.csv",
        b"\"a\",\"b\",\"c\",\"digit\"\n0,10,200,3\n",
    );
    assert_eq!(read_csv(&named).unwrap().labels, vec![3]);
    let only = put(dir.path(), "only.csv", b"label,pixel0\n");
    assert_fails(read_csv(&only), &only, &["no data rows"]);
    // Ten 4 × 4 images without the header, the label first: the last field, read as the label,
    // is 0 in every row.
    let rows: String = (0..10)
        .map(|i| format!("{},{}0\n", i % 3, "7,".repeat(15)))
        .collect();
    let headless = put(dir.path(), "headless.csv", rows.as_bytes());
    assert_fails(
        Dataset::load(&headless),
        &headless,
        &[
            "the label looks first",
            "header row naming its column `label`",
        ],
    );
    // With a header naming the last column, the same file is one class of 16-pixel rows.
    let one_class = put(
        dir.path(),
        "one-class.csv",
        format!("{}label\n{rows}", "p,".repeat(16)).as_bytes(),
    );
    let read = read_csv(&one_class).unwrap();
    assert_eq!((read.n, read.d, read.labels), (10, 16, vec![0; 10]));
}

#[test]
fn embedded_optdigits() {
    let ds = Dataset::embedded();
    assert_eq!(
        (ds.n, ds.d, ds.height, ds.width, ds.full_scale),
        (1797, 64, 8, 8, 16.0)
    );
    assert_eq!(ds.label_count(), Some(10));
    assert_eq!(ds.source, Path::new(EMBEDDED_SOURCE));
    let Pixels::U8(p) = &ds.pixels else {
        panic!("optdigits is 8-bit")
    };
    assert_eq!((p.len(), p.iter().max()), (1797 * 64, Some(&16)));
    assert_eq!(Dataset::load_or_embedded(None).unwrap().n, 1797);
    let sub = ds.subset(&[5, 0, 5]);
    assert_eq!((sub.n, sub.d), (3, 64));
    let (Pixels::U8(s), Some(l)) = (&sub.pixels, &sub.labels) else {
        panic!()
    };
    assert_eq!(
        (&s[..64], &s[64..128], l[0], l[2]),
        (&p[320..384], &p[..64], 5, 5)
    );
    assert!(matches!(ds.try_subset(&[1797]), Err(Error::Usage { .. })));
}

#[test]
fn labels_files_must_match() {
    let dir = tempfile::tempdir().unwrap();
    let text = put(dir.path(), "labels.txt", b"1\n2\n\n3\n");
    let csv = put(dir.path(), "x.csv", b"1,2,0\n3,4,0\n5,6,0\n");
    let ds = Dataset::load(&csv)
        .unwrap()
        .with_labels_file(&text)
        .unwrap();
    assert_eq!(ds.labels, Some(vec![1, 2, 3]));
    let short = put(dir.path(), "short.txt", b"1\n2\n");
    assert_fails(
        Dataset::load(&csv).unwrap().with_labels_file(&short),
        &short,
        &["2 labels", "3 observations"],
    );
    let bad = put(dir.path(), "bad.txt", b"1\nx\n3\n");
    assert_fails(
        Dataset::load(&csv).unwrap().with_labels_file(&bad),
        &bad,
        &["line 2"],
    );
}

#[test]
fn atomic_writes_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let file = put(dir.path(), "plain-file", b"x");
    let under = file.join("out.json");
    let e = write_json_atomic(&under, &[1, 2, 3]);
    assert!(matches!(e, Err(Error::Output { .. })));
    assert!(err(e).contains("out.json"));
    assert!(matches!(
        prepare_output_dir(&file.join("sub")),
        Err(Error::Output { .. })
    ));
    assert!(matches!(
        prepare_output_dir(&file),
        Err(Error::Output { .. })
    ));
    // A target that is a directory: the rename fails, the temporary file must go.
    let target = dir.path().join("a-dir");
    std::fs::create_dir(&target).unwrap();
    let e = write_atomic(&target, |w| w.write_all(b"data"));
    assert!(err(e).contains("a-dir"));
    let e = write_atomic(&dir.path().join("b.bin"), |_| {
        Err(std::io::Error::other("disk full"))
    });
    assert!(err(e).contains("b.bin"));
    let mut left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["a-dir", "plain-file"], "temporary files left behind");
    let out = dir.path().join("new/deeper");
    prepare_output_dir(&out).unwrap();
    write_json_atomic(&out.join("v.json"), &serde_json::json!({"a": [1, 2]})).unwrap();
    let text = std::fs::read_to_string(out.join("v.json")).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["a"][1],
        2
    );
}

#[test]
fn png_grid_layout_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grid.png");
    let first: Vec<f32> = vec![1.0, 0.0, 0.0, 0.5, 1.0, 1.0, 1.0, 1.0, 2.0, -1.0, 0.0, 0.0];
    let second = vec![0.25f32; 4];
    let sections: [(&[f32], usize); 3] = [(&first, 3), (&[], 0), (&second, 1)];
    write_png_grid(&path, &sections, 2, 2, 2, (0.0, 1.0), 3).unwrap();
    let img = image::open(&path).unwrap().to_luma8();
    // 2 columns of 6-pixel tiles + 3 gaps; section rows: 2 and 1 rows of 6 + gaps, a 3-pixel band.
    assert_eq!(img.dimensions(), (15, (2 * 7 + 1) + 3 + (7 + 1)));
    let at = |x: u32, y: u32| img.get_pixel(x, y)[0];
    assert_eq!(
        (at(1, 1), at(3, 3), at(4, 1), at(4, 4), at(0, 0)),
        (255, 255, 0, 128, 48)
    );
    assert_eq!(
        (at(8, 1), at(1, 8), at(4, 8)),
        (255, 255, 0),
        "second tile, clipping"
    );
    assert_eq!(at(8, 8), 48, "an empty slot shows the gap colour");
    assert_eq!(
        (at(7, 15), at(1, 19)),
        (128, 64),
        "separator band, second section"
    );
    assert!(write_png_grid(&path, &[(&[], 0)], 2, 2, 2, (0.0, 1.0), 1).is_err());
    assert!(write_png_grid(&path, &sections, 2, 2, 2, (1.0, 1.0), 1).is_err());
    let huge = write_png_grid(&path, &sections, 2, 2, 2, (0.0, 1.0), usize::MAX);
    assert!(err(huge).contains("too large"));
}

#[test]
fn shared_mnist_if_present() {
    let Some(mnist) = shared_datasets_dir()
        .map(|d| d.join("mnist"))
        .filter(|d| d.is_dir())
    else {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but the MNIST folder is missing"
        );
        eprintln!("skipping: no shared datasets folder with mnist/ (set RMLD_DATASETS)");
        return;
    };
    let train = Dataset::load(&mnist).unwrap();
    assert_eq!(
        (train.n, train.d, train.height, train.width),
        (60000, 784, 28, 28)
    );
    assert_eq!(
        (train.labels.as_ref().map(Vec::len), train.label_count()),
        (Some(60000), Some(10))
    );
    let test = Dataset::load_test_split(&mnist)
        .unwrap()
        .expect("t10k split");
    assert_eq!((test.n, test.labels.map(|l| l.len())), (10000, Some(10000)));
    let quickdraw = mnist.with_file_name("quickdraw").join("bowtie5000.npy");
    if quickdraw.is_file() {
        let q = Dataset::load(&quickdraw).unwrap();
        assert_eq!(
            (q.n, q.height, q.width, q.full_scale),
            (5000, 28, 28, 255.0)
        );
        // Our writer reproduces NumPy's file byte for byte.
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("copy.npy");
        let Pixels::U8(pixels) = &q.pixels else {
            panic!("uint8 data")
        };
        write_npy_u8(&copy, &[5000, 784], pixels).unwrap();
        assert!(std::fs::read(&copy).unwrap() == std::fs::read(&quickdraw).unwrap());
    }
}

#[test]
fn folder_of_npy_files_loads_one_class_per_file() {
    let dir = tempfile::tempdir().unwrap();
    // Name order, not creation order, fixes the labels.
    write_npy_u8(&dir.path().join("b-lollipop.npy"), &[2, 2, 2], &[9; 8]).unwrap();
    write_npy_u8(&dir.path().join("a-bowtie.npy"), &[3, 4], &[1; 12]).unwrap();
    let data = Dataset::load(dir.path()).unwrap();
    assert_eq!((data.n, data.d, data.height, data.width), (5, 4, 2, 2));
    assert_eq!(data.labels, Some(vec![0, 0, 0, 1, 1]));
    let Pixels::U8(v) = &data.pixels else {
        panic!("8-bit stays 8-bit")
    };
    assert_eq!(&v[..12], &[1; 12]);
    assert_eq!(&v[12..], &[9; 8]);
    // A file of another shape is named in the error.
    write_npy_u8(&dir.path().join("c-odd.npy"), &[1, 9], &[0; 9]).unwrap();
    let err = Dataset::load(dir.path()).unwrap_err().to_string();
    assert!(err.contains("c-odd.npy"), "{err}");
}

#[test]
fn npy_payload_read_in_one_go_keeps_every_check() {
    // A plain float32 file is read straight into its final buffer: the limit, truncation,
    // trailing data and non-finite values are still refused with the same messages.
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<f32> = (0..40).map(|i| i as f32 * 0.25).collect();
    let path = dir.path().join("f.npy");
    write_npy_f32(&path, &[8, 5], &values).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    let read = read_npy_with_limit(&path, size).unwrap();
    assert_eq!(read.shape, vec![8, 5]);
    assert_eq!(read.data, Pixels::F32(values.clone()));
    assert_fails(read_npy_with_limit(&path, size - 1), &path, &["limit"]);
    let bytes = std::fs::read(&path).unwrap();
    let long = put(dir.path(), "long.npy", &[&bytes[..], &[0]].concat());
    assert_fails(read_npy(&long), &long, &["trailing", "(8, 5)"]);
    let short = put(dir.path(), "short.npy", &bytes[..bytes.len() - 1]);
    assert_fails(read_npy(&short), &short, &["truncated", "159 bytes follow"]);
    let mut nan = bytes.clone();
    let at = nan.len() - 4 * 3;
    nan[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    let nan = put(dir.path(), "nan.npy", &nan);
    assert_fails(read_npy(&nan), &nan, &["index 37", "NaN"]);
    // The same content gzip'd goes through the growing buffer: same result.
    let gz_path = put(dir.path(), "f.npy.gz", &gz(&bytes));
    assert_eq!(read_npy(&gz_path).unwrap(), read);
}

#[test]
fn npy_writers_keep_dtype_shape_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.npy");
    let ints: Vec<i64> = vec![-1, 0, 1 << 40, i64::MIN];
    write_npy_i64(&path, &[2, 2], &ints).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let data: Vec<u8> = ints.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert!(bytes.ends_with(&data));
    assert_eq!(
        (bytes.len() - data.len()) % 64,
        0,
        "header padded to 64 bytes"
    );
    assert!(String::from_utf8_lossy(&bytes).contains("'descr': '<i8'"));
    write_npy_u32(&path, &[4], &[7, 8, 9, u32::MAX]).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.ends_with(&[7, 0, 0, 0, 8, 0, 0, 0, 9, 0, 0, 0, 255, 255, 255, 255]));
    assert_eq!(read_npy_labels(&path).unwrap(), vec![7, 8, 9, u32::MAX]);
}
