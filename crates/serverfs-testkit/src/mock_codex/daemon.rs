//! The daemon transport: WebSocket over a Unix socket, one JSON-RPC message
//! per text frame, request URI `ws://localhost/rpc` (spec-adapters §2.1 A
//! and B), and [`MockCodexDaemon`], the same server inside a test process.

use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::time::sleep_until;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;

use super::{MockState, Output, Session, diag};

/// Orders from the owner of a running server to its tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Control {
    /// Bumped to drop every connection open at that moment.
    pub(crate) epoch: u64,
    /// Stop accepting and drop every connection.
    pub(crate) shutdown: bool,
}

/// Accepts connections until `control` says shutdown (or its sender is
/// gone), one [`Session`] per connection, all sharing `state`.
pub(crate) async fn serve_unix(
    listener: UnixListener,
    state: MockState,
    mut control: watch::Receiver<Control>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(connection(stream, state.clone(), control.clone()));
                }
                Err(e) => {
                    diag(&format!("accept failed: {e}"));
                    // Typically EMFILE: back off instead of spinning.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            changed = control.changed() => {
                if changed.is_err() || control.borrow_and_update().shutdown {
                    return;
                }
            }
        }
    }
}

/// Refuses what the real daemon refuses: another path than `/rpc`, and
/// permessage-deflate (the daemon drops such clients, spec-adapters §2.1).
#[expect(
    clippy::result_large_err,
    reason = "the error type is tungstenite's callback signature"
)]
fn check_handshake(request: &Request, response: Response) -> Result<Response, ErrorResponse> {
    let reject = |status: StatusCode, why: &str| {
        let mut error = ErrorResponse::new(Some(why.to_owned()));
        *error.status_mut() = status;
        error
    };
    if request.uri().path() != "/rpc" {
        return Err(reject(StatusCode::NOT_FOUND, "mock-codex serves /rpc only"));
    }
    let deflate = request
        .headers()
        .get_all("sec-websocket-extensions")
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.contains("permessage-deflate")));
    if deflate {
        return Err(reject(
            StatusCode::BAD_REQUEST,
            "mock-codex: permessage-deflate is refused, as by the real daemon",
        ));
    }
    Ok(response)
}

/// Serves one WebSocket connection.
async fn connection(stream: UnixStream, state: MockState, mut control: watch::Receiver<Control>) {
    let epoch = control.borrow_and_update().epoch;
    let ws = match tokio_tungstenite::accept_hdr_async(stream, check_handshake).await {
        Ok(ws) => ws,
        Err(e) => {
            diag(&format!("WebSocket handshake failed: {e}"));
            return;
        }
    };
    let (mut sink, mut frames) = ws.split();
    let mut session = Session::new(state);
    loop {
        let deadline = session.next_deadline();
        let outputs = tokio::select! {
            frame = frames.next() => match frame {
                Some(Ok(Message::Text(text))) => session.on_text(text.as_bytes()),
                Some(Ok(Message::Binary(_))) => {
                    // Codex speaks text frames only; a binary frame is a
                    // client bug worth surfacing as a dropped connection.
                    diag("binary frame received; closing the connection");
                    return;
                }
                Some(Ok(Message::Close(_))) | None => return,
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => Vec::new(),
                Some(Err(e)) => {
                    diag(&format!("WebSocket read failed: {e}"));
                    return;
                }
            },
            () = sleep_until(deadline.unwrap_or_else(std::time::Instant::now).into()),
                if deadline.is_some() =>
            {
                session.on_deadline(std::time::Instant::now())
            }
            changed = control.changed() => {
                let now = *control.borrow_and_update();
                if changed.is_err() || now.shutdown || now.epoch != epoch {
                    // Dropped without a close frame, like a crashed daemon.
                    return;
                }
                Vec::new()
            }
        };
        for output in outputs {
            match output {
                Output::Send(msg) => {
                    if let Err(e) = sink.send(Message::text(msg.to_string())).await {
                        diag(&format!("WebSocket write failed: {e}"));
                        return;
                    }
                }
                Output::Raw(text) => {
                    if let Err(e) = sink.send(Message::text(text)).await {
                        diag(&format!("WebSocket write failed: {e}"));
                        return;
                    }
                }
                Output::Close => return,
            }
        }
    }
}

/// Binds `path`, replacing a stale socket file (one nobody listens on)
/// left by a killed server. Creates a missing parent directory with mode
/// 0700, as Codex does for its control directory.
///
/// The socket is bound and listening under a temporary sibling name first,
/// then renamed into place: a socket file that exists but does not listen
/// yet (the moment between `bind` and `listen`) refuses connections, and a
/// client that waits for the file to appear would be refused in that window.
pub(crate) fn bind_socket(path: &Path) -> io::Result<std::os::unix::net::UnixListener> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
    }
    let stale_or_free = |meta: std::fs::Metadata| {
        meta.file_type().is_socket() && std::os::unix::net::UnixStream::connect(path).is_err()
    };
    if !std::fs::symlink_metadata(path).map_or(true, stale_or_free) {
        return Err(io::Error::from(io::ErrorKind::AddrInUse));
    }
    let binding = parent
        .unwrap_or(Path::new("."))
        .join(format!(".binding-{}", std::process::id()));
    // A leftover of a killed test process with a reused pid.
    match std::fs::remove_file(&binding) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let listener = std::os::unix::net::UnixListener::bind(&binding)?;
    if let Err(e) = std::fs::rename(&binding, path) {
        let _ = std::fs::remove_file(&binding);
        return Err(e);
    }
    Ok(listener)
}

/// The mock Codex daemon inside the test process: a WebSocket server on a
/// Unix socket, one [`Session`] per connection, all sharing one
/// [`MockState`].
///
/// It runs on its own thread with its own Tokio runtime, so it works from
/// plain `#[test]`s and from `#[tokio::test]`s alike. Dropping it stops the
/// server, drops open connections and removes the socket.
///
/// ```no_run
/// # fn main() -> std::io::Result<()> {
/// use serverfs_testkit::mock_codex::MockCodexDaemon;
///
/// let home = tempfile::tempdir()?;
/// let socket = home.path().join("app-server-control/app-server-control.sock");
/// let daemon = MockCodexDaemon::start(&socket)?;
/// // … point the Bridge's Codex adapter at `socket`, run a task …
/// assert!(daemon.messages().iter().all(|m| m["params"].get("approvalPolicy").is_none()));
/// # Ok(())
/// # }
/// ```
pub struct MockCodexDaemon {
    socket_path: PathBuf,
    state: MockState,
    control: watch::Sender<Control>,
    thread: Option<JoinHandle<()>>,
}

impl MockCodexDaemon {
    /// Starts serving on `socket_path` (created, parent directory included);
    /// the socket accepts connections when this returns. `codexHome` in
    /// `initialize` is the socket's directory, or its parent when that is
    /// Codex's `app-server-control` directory.
    ///
    /// # Errors
    ///
    /// Binding the socket or starting the runtime failed (e.g. the path is
    /// in use or longer than `sun_path`).
    pub fn start(socket_path: impl AsRef<Path>) -> io::Result<MockCodexDaemon> {
        let socket_path = socket_path.as_ref();
        let dir = socket_path.parent().unwrap_or(Path::new("/"));
        let home = if dir.file_name().is_some_and(|n| n == "app-server-control") {
            dir.parent().unwrap_or(dir)
        } else {
            dir
        };
        MockCodexDaemon::start_with_state(socket_path, MockState::new(home))
    }

    /// As [`MockCodexDaemon::start`], with a state of your own (for example
    /// one that also logs to a file, or shared with another server).
    ///
    /// # Errors
    ///
    /// As [`MockCodexDaemon::start`].
    pub fn start_with_state(
        socket_path: impl AsRef<Path>,
        state: MockState,
    ) -> io::Result<MockCodexDaemon> {
        let socket_path = socket_path.as_ref().to_path_buf();
        let listener = bind_socket(&socket_path)?;
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (control, control_rx) = watch::channel(Control::default());
        let served = state.clone();
        let thread = std::thread::Builder::new()
            .name("mock-codex-daemon".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    match UnixListener::from_std(listener) {
                        Ok(listener) => serve_unix(listener, served, control_rx).await,
                        Err(e) => diag(&format!("cannot register the listener: {e}")),
                    }
                });
                // Dropping the runtime here cancels the connection tasks.
            })?;
        Ok(MockCodexDaemon {
            socket_path,
            state,
            control,
            thread: Some(thread),
        })
    }

    /// The socket it serves.
    pub fn socket_path(&self) -> &Path {
        &self.socket_path
    }

    /// The shared state (threads, received messages).
    pub fn state(&self) -> &MockState {
        &self.state
    }

    /// Every message received on any connection, in arrival order.
    pub fn messages(&self) -> Vec<Value> {
        self.state.messages()
    }

    /// Drops every open connection without a close frame, as a crashing
    /// daemon would; the server keeps accepting new ones and keeps its
    /// threads.
    pub fn drop_connections(&self) {
        self.control.send_modify(|c| c.epoch += 1);
    }
}

impl Drop for MockCodexDaemon {
    fn drop(&mut self) {
        self.control.send_modify(|c| c.shutdown = true);
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            diag("the daemon thread panicked");
        }
        if let Err(e) = std::fs::remove_file(&self.socket_path)
            && e.kind() != io::ErrorKind::NotFound
        {
            diag(&format!(
                "cannot remove {}: {e}",
                self.socket_path.display()
            ));
        }
    }
}
