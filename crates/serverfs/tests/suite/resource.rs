//! The `serverfs://{workdir}/{path}` resource.

use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serverfs_testkit::TempWorkdir;

use crate::common::{Server, TIMEOUT};

async fn read(server: &Server, uri: &str) -> Result<String, String> {
    let request = ReadResourceRequestParams::new(uri.to_owned());
    match tokio::time::timeout(TIMEOUT, server.client().read_resource(request))
        .await
        .unwrap()
    {
        Ok(result) => match &result.contents[..] {
            [ResourceContents::TextResourceContents { text, .. }] => Ok(text.clone()),
            other => panic!("unexpected contents {other:?}"),
        },
        Err(e) => Err(e.to_string()),
    }
}

#[tokio::test]
async fn whole_small_files_and_coded_refusals() {
    let t = TempWorkdir::new();
    t.file("a.txt", "\u{feff}hello\n")
        .file("dir/with space.txt", "nested\n")
        .file("big.txt", "x\n".repeat(600));
    let spec = format!("w={}", t.root().display());
    let server = Server::start(&["--workdir", &spec], &[("SERVERFS_MAX_READ_LINES", "500")]).await;
    assert_eq!(
        read(&server, "serverfs://w/a.txt").await.unwrap(),
        "hello\n"
    );
    assert_eq!(
        read(&server, "serverfs://w/dir/with%20space.txt")
            .await
            .unwrap(),
        "nested\n"
    );
    for (uri, code) in [
        ("serverfs://w/big.txt", "RESOURCE_TOO_LARGE"),
        ("serverfs://w/missing", "PATH_NOT_FOUND"),
        ("serverfs://nope/a.txt", "WORKDIR_NOT_FOUND"),
        (
            "serverfs://w/%2e%2e/outside/secret.txt",
            "PATH_OUTSIDE_WORKDIR",
        ),
        ("file:///etc/passwd", "INVALID_RESOURCE_URI"),
        ("serverfs://w/dir", "NOT_A_FILE"),
    ] {
        let err = read(&server, uri).await.unwrap_err();
        assert!(err.contains(&format!("{code}: ")), "{uri}: {err}");
    }
}
