//! The binary transfer tools through the real binary: byte-exact round
//! trips up to the cap, the embedded blob shape, ranged downloads with a
//! revision guard, the upload check order and overwrite semantics, and the
//! download refusals (spec-mcp-filesystem.md §1.7, §8.2).

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;
use sha2::{Digest, Sha256};

use crate::common::Server;

/// The binary transfer limit of every binary workdir here.
const CAP: usize = 4096;
/// A well-formed revision token no object has.
const STALE: &str = "v1:0000000000000000";

/// Four workdirs: `bin` (read-write, binary), `plain` (read-write, no
/// binary), `robin` (read-only, binary), `roplain` (read-only, no binary).
struct Fixture {
    bin: TempWorkdir,
    plain: TempWorkdir,
    robin: TempWorkdir,
    _roplain: TempWorkdir,
    server: Server,
}

impl Fixture {
    async fn start() -> Fixture {
        let (bin, plain, robin, roplain) = (
            TempWorkdir::new(),
            TempWorkdir::new(),
            TempWorkdir::new(),
            TempWorkdir::new(),
        );
        let config = bin.root().parent().unwrap().join("serverfs.toml");
        let text = format!(
            "[server]\n\
             max_binary_transfer_bytes = {CAP}\n\
             \n\
             [[workdirs]]\n\
             alias = \"bin\"\n\
             path = {}\n\
             read_only = false\n\
             binary_transfer = true\n\
             \n\
             [[workdirs]]\n\
             alias = \"plain\"\n\
             path = {}\n\
             read_only = false\n\
             \n\
             [[workdirs]]\n\
             alias = \"robin\"\n\
             path = {}\n\
             binary_transfer = true\n\
             \n\
             [[workdirs]]\n\
             alias = \"roplain\"\n\
             path = {}\n",
            toml_string(&bin.root()),
            toml_string(&plain.root()),
            toml_string(&robin.root()),
            toml_string(&roplain.root()),
        );
        std::fs::write(&config, text).unwrap();
        let server = Server::start(&["--config", config.to_str().unwrap()], &[]).await;
        Fixture {
            bin,
            plain,
            robin,
            _roplain: roplain,
            server,
        }
    }
}

/// A TOML basic string holding `path`.
fn toml_string(path: &Path) -> String {
    let text = path.to_str().expect("UTF-8 temp path");
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Deterministic pseudo-random bytes (SplitMix64).
fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

async fn revision(server: &Server, workdir: &str, path: &str) -> String {
    server
        .ok("stat_file", json!({"workdir": workdir, "path": path}))
        .await["revision"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A successful download: the structured metadata, the decoded bytes, and
/// the embedded resource as sent.
struct Download {
    meta: Value,
    bytes: Vec<u8>,
    resource: Value,
}

async fn download(server: &Server, args: Value) -> Download {
    let result = server.call("download_binary_file", args.clone()).await;
    assert_ne!(
        result.is_error,
        Some(true),
        "download({args}) failed: {:?}",
        result.structured_content
    );
    let meta = result
        .structured_content
        .clone()
        .expect("structured content");
    server.assert_matches_output_schema("download_binary_file", &meta);
    // The metadata as text first (for clients that pass the model only
    // `content`), then the bytes, once.
    assert_eq!(result.content.len(), 2, "a text and a resource block");
    let text = result.content[0].as_text().expect("a text block first");
    assert_eq!(
        serde_json::from_str::<Value>(&text.text).expect("the metadata as JSON"),
        meta
    );
    let block = serde_json::to_value(&result.content[1]).unwrap();
    assert_eq!(block["type"], "resource", "{block}");
    let resource = block["resource"].clone();
    let mut keys: Vec<&str> = resource
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["blob", "mimeType", "uri"],
        "a blob resource: {resource}"
    );
    let bytes = BASE64
        .decode(resource["blob"].as_str().unwrap())
        .expect("standard base64 blob");
    assert_eq!(resource["mimeType"], meta["mime_type"]);
    assert_eq!(
        meta["sha256"],
        sha256_hex(&bytes),
        "sha256 of the returned bytes"
    );
    assert_eq!(meta["bytes_returned"], bytes.len());
    Download {
        meta,
        bytes,
        resource,
    }
}

fn upload(workdir: &str, path: &str, data: &[u8]) -> Value {
    json!({"workdir": workdir, "path": path, "data_base64": BASE64.encode(data)})
}

fn overwrite(workdir: &str, path: &str, data: &[u8], revision: &str) -> Value {
    json!({"workdir": workdir, "path": path, "data_base64": BASE64.encode(data),
           "overwrite": true, "expected_revision": revision})
}

#[tokio::test]
async fn round_trips_up_to_the_cap() {
    let f = Fixture::start().await;
    for (seed, size) in [0, 1, 2, 3, 1000, CAP - 1, CAP].into_iter().enumerate() {
        let data = random_bytes(size, seed as u64 + 1);
        let path = format!("blob-{size}.bin");
        let up = f
            .server
            .ok("upload_binary_file", upload("bin", &path, &data))
            .await;
        let rev = revision(&f.server, "bin", &path).await;
        assert_eq!(
            up,
            json!({"workdir": "bin", "path": path, "created": true, "replaced": false,
                   "bytes_written": size, "sha256": sha256_hex(&data),
                   "revision_before": null, "revision": rev})
        );
        assert_eq!(std::fs::read(f.bin.path(&path)).unwrap(), data, "{size}");
        let down = download(&f.server, json!({"workdir": "bin", "path": path})).await;
        assert_eq!(down.bytes, data, "{size}");
        assert_eq!(
            down.meta,
            json!({"workdir": "bin", "path": path, "size": size,
                   "mime_type": "application/octet-stream", "sha256": sha256_hex(&data),
                   "revision": rev, "offset": 0, "bytes_returned": size, "has_more": false})
        );
        assert_eq!(down.resource["uri"], format!("serverfs://bin/{path}"));
    }
}

#[tokio::test]
async fn over_the_cap_is_refused_both_ways() {
    let f = Fixture::start().await;
    let data = random_bytes(CAP + 1, 7);
    // The encoded length of CAP + 1 bytes passes the pre-decode check; the
    // decoded length is refused.
    assert_eq!(
        f.server
            .err("upload_binary_file", upload("bin", "big.bin", &data))
            .await,
        "BINARY_PAYLOAD_TOO_LARGE"
    );
    // Far over: refused before decoding.
    assert_eq!(
        f.server
            .err(
                "upload_binary_file",
                upload("bin", "big.bin", &random_bytes(3 * CAP, 8))
            )
            .await,
        "BINARY_PAYLOAD_TOO_LARGE"
    );
    assert!(!f.bin.path("big.bin").exists());
    f.bin.file("big.bin", &data);
    assert_eq!(
        f.server
            .err(
                "download_binary_file",
                json!({"workdir": "bin", "path": "big.bin"})
            )
            .await,
        "BINARY_FILE_TOO_LARGE"
    );
    // Overwrite with a payload over the cap changes nothing.
    f.bin.file("small.bin", b"small");
    let rev = revision(&f.server, "bin", "small.bin").await;
    assert_eq!(
        f.server
            .err(
                "upload_binary_file",
                overwrite("bin", "small.bin", &data, &rev)
            )
            .await,
        "BINARY_PAYLOAD_TOO_LARGE"
    );
    assert_eq!(std::fs::read(f.bin.path("small.bin")).unwrap(), b"small");
    assert_eq!(revision(&f.server, "bin", "small.bin").await, rev);
}

#[tokio::test]
async fn download_shape_uri_and_mime_type() {
    let f = Fixture::start().await;
    let png = random_bytes(300, 3);
    f.bin
        .file("img/my pic #1.png", &png)
        .file("notes.txt", "plain text\n")
        .file("data", b"\x00\x01");
    let down = download(
        &f.server,
        json!({"workdir": "bin", "path": "./img/../img/my pic #1.png"}),
    )
    .await;
    let rev = revision(&f.server, "bin", "img/my pic #1.png").await;
    assert_eq!(down.bytes, png);
    assert_eq!(
        down.resource,
        json!({"uri": "serverfs://bin/img/my%20pic%20%231.png", "mimeType": "image/png",
               "blob": BASE64.encode(&png)})
    );
    assert_eq!(
        down.meta,
        json!({"workdir": "bin", "path": "img/my pic #1.png", "size": 300,
               "mime_type": "image/png", "sha256": sha256_hex(&png), "revision": rev,
               "offset": 0, "bytes_returned": 300, "has_more": false})
    );
    let text = download(&f.server, json!({"workdir": "bin", "path": "notes.txt"})).await;
    assert_eq!(text.meta["mime_type"], "text/plain");
    assert_eq!(text.bytes, b"plain text\n");
    let data = download(&f.server, json!({"workdir": "bin", "path": "data"})).await;
    assert_eq!(data.meta["mime_type"], "application/octet-stream");
    // Reading does not change the revision.
    assert_eq!(revision(&f.server, "bin", "img/my pic #1.png").await, rev);
}

#[tokio::test]
async fn ranged_download_reassembles_a_large_file() {
    let f = Fixture::start().await;
    let data = random_bytes(3 * CAP + 123, 11);
    f.bin.file("large.bin", &data);
    let first = download(
        &f.server,
        json!({"workdir": "bin", "path": "large.bin", "max_bytes": 3000}),
    )
    .await;
    let rev = first.meta["revision"].as_str().unwrap().to_owned();
    assert_eq!(rev, revision(&f.server, "bin", "large.bin").await);
    assert_eq!(first.meta["size"], data.len());
    assert_eq!(first.meta["has_more"], true);
    assert_eq!(first.bytes.len(), 3000);
    let mut assembled = first.bytes;
    let mut pieces = 1;
    loop {
        let piece = download(
            &f.server,
            json!({"workdir": "bin", "path": "large.bin", "offset": assembled.len(),
                   "max_bytes": 3000, "expected_revision": rev}),
        )
        .await;
        assert_eq!(piece.meta["offset"], assembled.len());
        assert_eq!(piece.meta["revision"], rev.as_str());
        assert_eq!(piece.meta["size"], data.len());
        assembled.extend_from_slice(&piece.bytes);
        pieces += 1;
        assert_eq!(piece.meta["has_more"], assembled.len() < data.len());
        if piece.meta["has_more"] == false {
            break;
        }
        assert!(pieces < 10, "too many pieces");
    }
    assert_eq!(pieces, 5);
    assert_eq!(assembled, data);
    assert_eq!(sha256_hex(&assembled), sha256_hex(&data));

    // max_bytes above the cap is capped; an offset past the end returns nothing.
    let capped = download(
        &f.server,
        json!({"workdir": "bin", "path": "large.bin", "max_bytes": 1_000_000}),
    )
    .await;
    assert_eq!(capped.bytes, data[..CAP]);
    assert_eq!(capped.meta["has_more"], true);
    let past = download(
        &f.server,
        json!({"workdir": "bin", "path": "large.bin", "offset": data.len() + 10, "max_bytes": 10}),
    )
    .await;
    assert_eq!(past.bytes, b"");
    assert_eq!(past.meta["has_more"], false);
    assert_eq!(past.meta["sha256"], sha256_hex(b""));

    // A change between pieces is caught.
    std::fs::write(f.bin.path("large.bin"), &data[..data.len() - 1]).unwrap();
    assert_eq!(
        f.server
            .err(
                "download_binary_file",
                json!({"workdir": "bin", "path": "large.bin", "offset": 3000, "max_bytes": 3000,
                       "expected_revision": rev}),
            )
            .await,
        "REVISION_CONFLICT"
    );
    assert_eq!(
        f.server
            .err(
                "download_binary_file",
                json!({"workdir": "bin", "path": "large.bin", "max_bytes": 10, "expected_revision": STALE}),
            )
            .await,
        "REVISION_CONFLICT"
    );
    assert_eq!(
        f.server
            .err(
                "download_binary_file",
                json!({"workdir": "bin", "path": "large.bin", "max_bytes": 0}),
            )
            .await,
        "INVALID_ARGUMENT"
    );
}

#[tokio::test]
async fn upload_check_order() {
    let f = Fixture::start().await;
    f.bin.file("exists.bin", b"old").dir("dir");
    let before = std::fs::read_dir(f.bin.root()).unwrap().count();
    let up = |workdir: &str, path: &str, data: &str, overwrite: Option<bool>, rev: Option<&str>| {
        let mut args = json!({"workdir": workdir, "path": path, "data_base64": data});
        if let Some(o) = overwrite {
            args["overwrite"] = json!(o);
        }
        if let Some(r) = rev {
            args["expected_revision"] = json!(r);
        }
        args
    };
    let huge = "A".repeat(8 * CAP);
    let cases = [
        // Each case would also fail every later check.
        (
            up("nope", "../x", "***", Some(true), None),
            "WORKDIR_NOT_FOUND",
        ),
        (
            up("roplain", "../x", "***", Some(true), None),
            "WORKDIR_READ_ONLY",
        ),
        (
            up("robin", "../x", "***", Some(true), None),
            "WORKDIR_READ_ONLY",
        ),
        (
            up("plain", "../x", "***", Some(true), None),
            "BINARY_TRANSFER_DISABLED",
        ),
        (
            up("plain", "ok.bin", "YQ==", None, None),
            "BINARY_TRANSFER_DISABLED",
        ),
        (
            up("bin", "../x", "***", Some(true), None),
            "PATH_OUTSIDE_WORKDIR",
        ),
        (
            up("bin", ".serverfs-tmp-x", "***", Some(true), None),
            "RESERVED_PATH",
        ),
        (
            up("bin", ".env", "***", Some(true), None),
            "HIDDEN_PATH_NOT_ALLOWED",
        ),
        (up("bin", "key.pem", "***", Some(true), None), "DENIED_PATH"),
        (
            up("bin", "", "***", Some(true), None),
            "ROOT_MUTATION_NOT_ALLOWED",
        ),
        (
            up("bin", "dir/..", "***", Some(false), Some(STALE)),
            "ROOT_MUTATION_NOT_ALLOWED",
        ),
        (
            up("bin", "exists.bin", "***", Some(true), None),
            "EXPECTED_REVISION_REQUIRED",
        ),
        (
            up("bin", "exists.bin", "***", None, Some(STALE)),
            "EXPECTED_REVISION_NOT_ALLOWED",
        ),
        (
            up("bin", "exists.bin", "***", Some(false), Some(STALE)),
            "EXPECTED_REVISION_NOT_ALLOWED",
        ),
        // Decoding comes before the filesystem: these paths would fail too.
        (up("bin", "exists.bin", "***", None, None), "INVALID_BASE64"),
        (
            up("bin", "missing/x.bin", "YQ=", None, None),
            "INVALID_BASE64",
        ),
        (
            up("bin", "dir", &huge, Some(true), Some(STALE)),
            "BINARY_PAYLOAD_TOO_LARGE",
        ),
        (
            up("bin", "exists.bin", &huge, None, None),
            "BINARY_PAYLOAD_TOO_LARGE",
        ),
    ];
    for (args, code) in cases {
        assert_eq!(
            f.server.err("upload_binary_file", args.clone()).await,
            code,
            "{args}"
        );
    }
    for bad in [
        "YQ=", "Y Q==", "YQ==\n", "\tYQ==", "***", "YQ", "-_8=", "ab-_", "YR==", "é===", "YQ==YQ==",
    ] {
        assert_eq!(
            f.server
                .err("upload_binary_file", up("bin", "b64.bin", bad, None, None))
                .await,
            "INVALID_BASE64",
            "{bad:?}"
        );
    }
    assert_eq!(std::fs::read_dir(f.bin.root()).unwrap().count(), before);
    assert_eq!(std::fs::read(f.bin.path("exists.bin")).unwrap(), b"old");
    assert!(!f.plain.path("ok.bin").exists());
    // The canonical forms do decode; an empty payload makes an empty file.
    for (path, data, bytes) in [
        ("a.bin", "YQ==", &b"a"[..]),
        ("ab.bin", "YWI=", b"ab"),
        ("plus.bin", "+/8=", b"\xfb\xff"),
        ("empty.bin", "", b""),
    ] {
        let r = f
            .server
            .ok("upload_binary_file", up("bin", path, data, None, None))
            .await;
        assert_eq!(r["bytes_written"], bytes.len());
        assert_eq!(std::fs::read(f.bin.path(path)).unwrap(), bytes);
    }
}

#[tokio::test]
async fn upload_create_and_overwrite() {
    let f = Fixture::start().await;
    f.bin
        .file("file.bin", b"old bytes")
        .file("plain", b"p")
        .file("real/x.bin", b"x")
        .file("h1.bin", b"linked")
        .dir("dir")
        .symlink("dangling", "nowhere")
        .symlink("link.bin", "file.bin")
        .symlink("linkdir", "real")
        .hardlink("h1.bin", "h2.bin");
    f.bin.fifo("pipe");
    let data = random_bytes(CAP, 21);
    let rev = revision(&f.server, "bin", "file.bin").await;
    let h1 = revision(&f.server, "bin", "h1.bin").await;
    let cases = [
        (upload("bin", "file.bin", &data), "PATH_ALREADY_EXISTS"),
        (upload("bin", "dir", &data), "PATH_ALREADY_EXISTS"),
        (upload("bin", "dangling", &data), "PATH_ALREADY_EXISTS"),
        (upload("bin", "link.bin", &data), "PATH_ALREADY_EXISTS"),
        (upload("bin", "pipe", &data), "PATH_ALREADY_EXISTS"),
        (upload("bin", "missing/x.bin", &data), "PARENT_NOT_FOUND"),
        (upload("bin", "plain/x.bin", &data), "NOT_A_DIRECTORY"),
        (upload("bin", "linkdir/y.bin", &data), "SYMLINK_NOT_ALLOWED"),
        (
            overwrite("bin", "file.bin", &data, STALE),
            "REVISION_CONFLICT",
        ),
        (
            overwrite("bin", "missing.bin", &data, STALE),
            "PATH_NOT_FOUND",
        ),
        (overwrite("bin", "dir", &data, STALE), "NOT_A_FILE"),
        (
            overwrite("bin", "link.bin", &data, STALE),
            "SYMLINK_NOT_ALLOWED",
        ),
        (
            overwrite("bin", "pipe", &data, STALE),
            "UNSUPPORTED_FILE_TYPE",
        ),
        (
            overwrite("bin", "linkdir/x.bin", &data, STALE),
            "SYMLINK_NOT_ALLOWED",
        ),
        (
            overwrite("bin", "h1.bin", &data, &h1),
            "MULTIPLE_HARDLINKS_NOT_SUPPORTED",
        ),
    ];
    for (args, code) in cases {
        let path = args["path"].clone();
        assert_eq!(
            f.server.err("upload_binary_file", args).await,
            code,
            "{path}"
        );
    }
    assert_eq!(std::fs::read(f.bin.path("file.bin")).unwrap(), b"old bytes");
    assert_eq!(std::fs::read(f.bin.path("h1.bin")).unwrap(), b"linked");
    assert_eq!(std::fs::read(f.bin.path("real/x.bin")).unwrap(), b"x");
    assert_eq!(revision(&f.server, "bin", "file.bin").await, rev);

    let r = f
        .server
        .ok(
            "upload_binary_file",
            overwrite("bin", "./file.bin", &data, &rev),
        )
        .await;
    let new_rev = revision(&f.server, "bin", "file.bin").await;
    assert_ne!(new_rev, rev);
    assert_eq!(
        r,
        json!({"workdir": "bin", "path": "file.bin", "created": false, "replaced": true,
               "bytes_written": CAP, "sha256": sha256_hex(&data), "revision_before": rev,
               "revision": new_rev})
    );
    assert_eq!(std::fs::read(f.bin.path("file.bin")).unwrap(), data);
    // The old token is spent; the new one works at once.
    assert_eq!(
        f.server
            .err(
                "upload_binary_file",
                overwrite("bin", "file.bin", b"again", &rev)
            )
            .await,
        "REVISION_CONFLICT"
    );
    let r = f
        .server
        .ok(
            "upload_binary_file",
            overwrite("bin", "file.bin", b"", &new_rev),
        )
        .await;
    assert_eq!(r["bytes_written"], 0);
    assert_eq!(std::fs::read(f.bin.path("file.bin")).unwrap(), b"");
    let down = download(&f.server, json!({"workdir": "bin", "path": "file.bin"})).await;
    assert_eq!(down.meta["revision"], r["revision"]);
    assert_eq!(down.bytes, b"");
    let debris: Vec<String> = std::fs::read_dir(f.bin.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".serverfs-tmp-"))
        .collect();
    assert_eq!(debris, Vec::<String>::new());
}

#[tokio::test]
async fn download_refusals_and_read_only_workdirs() {
    let f = Fixture::start().await;
    f.robin.file("ro.bin", b"\x00read-only bytes");
    f.plain.file("p.bin", b"plain");
    f.bin
        .file("real/x.bin", b"x")
        .dir("dir")
        .symlink("link.bin", "real/x.bin")
        .symlink("out.bin", f.bin.outside().join("secret.txt"))
        .symlink("linkdir", "real");
    f.bin.fifo("pipe");
    // Downloads work on a read-only workdir with binary enabled.
    let down = download(&f.server, json!({"workdir": "robin", "path": "ro.bin"})).await;
    assert_eq!(down.bytes, b"\x00read-only bytes");
    assert_eq!(down.resource["uri"], "serverfs://robin/ro.bin");
    assert_eq!(
        f.server
            .err("upload_binary_file", upload("robin", "new.bin", b"x"))
            .await,
        "WORKDIR_READ_ONLY"
    );
    let dl = |workdir: &str, path: &str| json!({"workdir": workdir, "path": path});
    for (args, code) in [
        (dl("nope", "../x"), "WORKDIR_NOT_FOUND"),
        // Binary enablement is checked before the path.
        (dl("plain", "../x"), "BINARY_TRANSFER_DISABLED"),
        (dl("plain", ".env"), "BINARY_TRANSFER_DISABLED"),
        (dl("plain", "p.bin"), "BINARY_TRANSFER_DISABLED"),
        (dl("roplain", "x"), "BINARY_TRANSFER_DISABLED"),
        (dl("bin", "../x"), "PATH_OUTSIDE_WORKDIR"),
        (dl("bin", ".serverfs-tmp-x"), "RESERVED_PATH"),
        (dl("bin", ".env"), "HIDDEN_PATH_NOT_ALLOWED"),
        (dl("bin", "id_rsa"), "DENIED_PATH"),
        (dl("bin", "missing.bin"), "PATH_NOT_FOUND"),
        (dl("bin", "dir"), "NOT_A_FILE"),
        (dl("bin", ""), "NOT_A_FILE"),
        (dl("bin", "link.bin"), "SYMLINK_NOT_ALLOWED"),
        (dl("bin", "out.bin"), "SYMLINK_NOT_ALLOWED"),
        (dl("bin", "linkdir/x.bin"), "SYMLINK_NOT_ALLOWED"),
        (dl("bin", "pipe"), "UNSUPPORTED_FILE_TYPE"),
    ] {
        assert_eq!(
            f.server.err("download_binary_file", args.clone()).await,
            code,
            "{args}"
        );
    }
}
