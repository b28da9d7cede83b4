//! Host-path redaction: what an agent emits is rewritten so no absolute
//! host path reaches a client (ARCHITECTURE.md invariant 4). Event
//! payloads, approval and question payloads, the final response and
//! provider error messages all pass through a [`Redactor`] bound to the
//! task's workdir root, before size checks and storage
//! (spec-agent-bridge.md §12.2, §5.5, §6).
//!
//! Everything here is lexical: the filesystem is never consulted, so a
//! symlinked root is recognised only through the spellings the caller
//! hands to [`Redactor::new`] (the configured one and the canonical one).
//!
//! Three renderings exist:
//!
//! * **path form** ([`Redactor::path`]): workdir-relative (`.` for the
//!   root), or [`OUTSIDE_MARKER`];
//! * **free-text form** ([`Redactor::text`]): host paths inside prose
//!   become [`WORKDIR_MARKER`]`/rel` or [`OUTSIDE_MARKER`];
//! * **structured form** ([`Redactor::value`]): JSON walked recursively,
//!   choosing between the two by key.
//!
//! What a path outside the workdir becomes depends on who reads it. In
//! events, final responses and errors it is [`OUTSIDE_MARKER`]. In the
//! approvals and questions a human must judge, an [informative]
//! redactor (the workdir's `approval_paths = "informative"`, issue 18)
//! shows well-known system locations as they are, the Bridge user's home
//! as `~`, and anything else as `<outside-workdir>/…/<last component>`;
//! a path above the workdir root stays [`OUTSIDE_MARKER`], so where the
//! workdirs live is never shown.
//!
//! [informative]: Redactor::informative

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What a workdir root becomes inside free text (`<workdir>/src/lib.rs`).
pub const WORKDIR_MARKER: &str = "<workdir>";

/// What a path outside the workdir becomes, in every form.
pub const OUTSIDE_MARKER: &str = "<outside-workdir>";

/// Provider-native identifiers: they correlate with host-side session
/// stores, so they are removed rather than rewritten (§12.2).
const DROPPED_KEYS: [&str; 4] = [
    "native_session_id",
    "native_turn_id",
    "thread_id",
    "turn_id",
];

/// Keys whose string value is a path, rendered in path form.
const PATH_KEYS: [&str; 6] = [
    "path",
    "cwd",
    "relative_cwd",
    "host_path",
    "file_path",
    "grantRoot",
];

/// Keys whose array value lists paths (sandbox grants), each string element
/// rendered in path form.
const PATH_LIST_KEYS: [&str; 4] = ["read", "write", "readableRoots", "writableRoots"];

/// What an informative redactor puts between [`OUTSIDE_MARKER`] and the
/// last component of a path it does not show.
const ELIDED: &str = "/…/";

/// Top-level trees that are the same on every Linux host: a path under
/// one reveals nothing of the deployment, and tells a human judging an
/// approval what would run or be read (`/bin/bash`, `/etc/hosts`).
/// `/tmp`, `/var`, `/srv`, `/opt`, `/home`, `/root`, `/mnt`… are not
/// among them: they hold whatever a host puts there.
const SYSTEM_TREES: [&str; 10] = [
    "bin", "sbin", "usr", "lib", "lib32", "lib64", "libx32", "etc", "proc", "sys",
];

/// Device nodes shown as they are (the rest of `/dev`, such as `/dev/shm`,
/// can hold anything).
const SYSTEM_DEVICES: [&str; 9] = [
    "null", "zero", "full", "random", "urandom", "tty", "stdin", "stdout", "stderr",
];

/// Characters ending a path token at its tail when they close a sentence
/// (`see /srv/work/a.rs.`); never part of the rendered path.
const TRAILING_PUNCTUATION: [char; 3] = ['.', '!', '?'];

/// Rewrites host paths relative to one workdir root, known by one or more
/// spellings.
///
/// # Security
///
/// Upholds ARCHITECTURE.md invariant 4 for what it is given: after
/// [`Redactor::value`], [`Redactor::path`] or [`Redactor::text`], a root
/// spelling, or an absolute path of two or more segments outside the root,
/// survives only where the character before it does not start a path: glued
/// to a word (`foo/srv/work`, not an absolute path) or after a URL host
/// (`ssh://host/srv/work`). The rules, with the exact token grammar, are on
/// [`Redactor::text`].
///
/// Its `Debug` output shows how many spellings it holds, never the
/// spellings: they are host paths.
///
/// ```
/// use serverfs_agent_bridge::redact::Redactor;
///
/// let redactor = Redactor::new(["/srv/work".into()]);
/// assert_eq!(redactor.path("/srv/work/src/lib.rs"), "src/lib.rs");
/// assert_eq!(
///     redactor.text("edited /srv/work/src/lib.rs, read /etc/passwd."),
///     "edited <workdir>/src/lib.rs, read <outside-workdir>."
/// );
/// let mut payload = serde_json::json!({"cwd": "/srv/work", "thread_id": "t1"});
/// redactor.value(&mut payload);
/// assert_eq!(payload, serde_json::json!({"cwd": "."}));
/// ```
#[derive(Clone)]
pub struct Redactor {
    /// Longest spelling first: a spelling that prefixes another must not
    /// win, so `/srv/work` never hides `/srv/work/inner` when both are roots.
    roots: Vec<Root>,
    /// How a path outside every root is shown.
    outside: Outside,
}

/// How a [`Redactor`] shows a path outside the workdir.
#[derive(Clone)]
enum Outside {
    /// Always [`OUTSIDE_MARKER`].
    Hidden,
    /// System locations as they are, the home as `~`, the rest as
    /// [`OUTSIDE_MARKER`] plus the last component.
    Informative {
        /// The segments of the Bridge user's home, when it is known and is
        /// not `/`.
        home: Option<Vec<String>>,
    },
}

#[derive(Clone)]
struct Root {
    /// Lexically normalised, no trailing slash; `/` for the host root.
    spelling: String,
    segments: Vec<String>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Redactor")
            .field("root_spellings", &self.roots.len())
            .finish()
    }
}

impl Redactor {
    /// A redactor for the root known by `roots` (for instance the
    /// configured `/srv/work` and, when that is a symlink, its target
    /// `/mnt/data/work`; the caller resolves them).
    ///
    /// Each spelling is normalised lexically (`//`, `.` and `..` collapsed,
    /// trailing slash dropped); relative entries are ignored, duplicates
    /// merged. A spelling that is not UTF-8 is kept in its lossy form, the
    /// only way it could appear in the UTF-8 text we redact. With no usable
    /// spelling every absolute path is outside. A root of `/` is a
    /// degenerate configuration: every absolute path is then inside and is
    /// rendered relative to `/`.
    pub fn new<I: IntoIterator<Item = PathBuf>>(roots: I) -> Redactor {
        let mut spellings: Vec<Root> = Vec::new();
        for root in roots {
            if !root.is_absolute() {
                continue;
            }
            let raw = root.to_string_lossy();
            let segments: Vec<String> = normalize(&raw).into_iter().map(str::to_owned).collect();
            let spelling = format!("/{}", segments.join("/"));
            if spellings.iter().all(|known| known.spelling != spelling) {
                spellings.push(Root { spelling, segments });
            }
        }
        spellings.sort_by_key(|root| std::cmp::Reverse(root.spelling.len()));
        Redactor {
            roots: spellings,
            outside: Outside::Hidden,
        }
    }

    /// This redactor, showing paths outside the workdir as a person
    /// judging an approval needs them (`approval_paths = "informative"`):
    ///
    /// * a path above a root spelling (`/srv` for `/srv/work`), or `/`
    ///   itself: [`OUTSIDE_MARKER`], as ever — the deployment's layout
    ///   stays hidden;
    /// * under `/bin`, `/sbin`, `/usr`, `/lib`, `/lib32`, `/lib64`,
    ///   `/libx32`, `/etc`, `/proc`, `/sys`, or one of the devices
    ///   `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`,
    ///   `/dev/urandom`, `/dev/tty`, `/dev/stdin`, `/dev/stdout`,
    ///   `/dev/stderr`: the normalised path as it is;
    /// * under `home` (the Bridge user's `$HOME`; ignored when relative or
    ///   `/`): `~` plus the rest (`~/.ssh/id_rsa`);
    /// * anything else: [`OUTSIDE_MARKER`]`/…/` plus its last component
    ///   (`<outside-workdir>/…/secret.txt`), which names the file without
    ///   showing where it is.
    ///
    /// The free-text form still leaves a one-segment token in prose alone
    /// (`/usr`, `/api`), and a relative path climbing above its start is
    /// still [`OUTSIDE_MARKER`]. Every rendering is stable under a second
    /// pass.
    ///
    /// ```
    /// use serverfs_agent_bridge::redact::Redactor;
    ///
    /// let redactor = Redactor::new(["/srv/work".into()]).informative(Some("/home/alice".into()));
    /// assert_eq!(
    ///     redactor.text("/bin/bash -lc 'cat /home/alice/.ssh/id_rsa /srv/other/notes.txt'"),
    ///     "/bin/bash -lc 'cat ~/.ssh/id_rsa <outside-workdir>/…/notes.txt'"
    /// );
    /// assert_eq!(redactor.path("/srv"), "<outside-workdir>");
    /// ```
    #[must_use]
    pub fn informative(self, home: Option<PathBuf>) -> Redactor {
        let home = home
            .filter(|home| home.is_absolute())
            .map(|home| {
                normalize(&home.to_string_lossy())
                    .into_iter()
                    .map(str::to_owned)
                    .collect::<Vec<String>>()
            })
            .filter(|segments| !segments.is_empty());
        Redactor {
            outside: Outside::Informative { home },
            ..self
        }
    }

    /// Redacts a JSON value in place.
    ///
    /// Recursively over objects and arrays:
    ///
    /// * keys `native_session_id`, `native_turn_id`, `thread_id` and
    ///   `turn_id` are dropped, with their values;
    /// * a string under `path`, `cwd`, `relative_cwd`, `host_path`,
    ///   `file_path` or `grantRoot` takes the path form ([`Redactor::path`]);
    /// * an array under `read`, `write`, `readableRoots` or `writableRoots`
    ///   has each string element in path form (other elements are walked);
    /// * any other string — object keys included, since maps keyed by file
    ///   (a patch's `changes`) are common — takes the path form when the
    ///   whole string is one absolute path token (see [`Redactor::text`]),
    ///   the free-text form otherwise.
    ///
    /// Two keys that redact to the same text (two files outside the
    /// workdir) collide; the one later in the map's order is kept.
    ///
    /// Recursion follows the value's depth, which `serde_json`'s parser
    /// bounds (128) for every value decoded from provider output.
    pub fn value(&self, value: &mut Value) {
        match value {
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
            Value::String(text) => *text = self.string(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.value(item)),
            Value::Object(map) => {
                for (key, mut entry) in std::mem::take(map) {
                    if DROPPED_KEYS.contains(&key.as_str()) {
                        continue;
                    }
                    self.keyed(&key, &mut entry);
                    map.insert(self.string(&key), entry);
                }
            }
        }
    }

    /// Redacts a typed payload: serialises it, applies [`Redactor::value`],
    /// deserialises the result.
    ///
    /// # Errors
    ///
    /// The `serde_json` error when `T` does not serialise to JSON, or no
    /// longer deserialises once redacted (a required field named like a
    /// dropped key, an enum tag that was an absolute path).
    pub fn redact<T: Serialize + DeserializeOwned>(
        &self,
        payload: &T,
    ) -> Result<T, serde_json::Error> {
        let mut value = serde_json::to_value(payload)?;
        self.value(&mut value);
        serde_json::from_value(value)
    }

    /// The path form of `text`.
    ///
    /// An absolute path is normalised lexically (`//`, `.`, `..`; `/..` is
    /// `/`) and rendered relative to the longest root spelling it lies
    /// under, `.` for the root itself, [`OUTSIDE_MARKER`] when it lies
    /// under none (a sibling such as `/srv/work2` included). A relative
    /// path is returned as it is, unless its `..` segments climb above its
    /// start (`a/../../b`), which gives [`OUTSIDE_MARKER`].
    #[must_use]
    pub fn path(&self, text: &str) -> String {
        if text.starts_with('/') {
            match self.relative(text) {
                Some(rel) if rel.is_empty() => ".".to_owned(),
                Some(rel) => rel.join("/"),
                None => self.outside(text),
            }
        } else if climbs_above_start(text) {
            OUTSIDE_MARKER.to_owned()
        } else {
            text.to_owned()
        }
    }

    /// The free-text form of `text`: prose with host paths in it (a final
    /// response, a provider error message, a non-path JSON string).
    ///
    /// **Path start.** A `/` starts a path token when it begins the text,
    /// or when the character before it is
    ///
    /// * whitespace or a control character;
    /// * one of ``' " ` ( [ { < , ; =``;
    /// * `>`, unless it closes [`WORKDIR_MARKER`] (so `<workdir>/a/b`, our
    ///   own output, is left alone);
    /// * `:`, unless the `/` is followed by another `/` (a URL authority:
    ///   `https://host/a/b` is not a path);
    /// * `/`, only when the text before ends with `://` (an empty URL
    ///   authority: the path of `file:///etc/passwd`);
    /// * a non-ASCII character that is not alphanumeric (`«`, `→`, emoji).
    ///
    /// Any other preceding character (ASCII letters and digits, `.`, `-`,
    /// `_`, `~`, `)`…, non-ASCII letters) glues the `/` to a word, so
    /// `3/4`, `and/or`, `../x` and `foo/srv/work` are not paths.
    ///
    /// **Token.** From its start, a token runs over the root spelling found
    /// there, if any (so a root containing a space still counts as one),
    /// then to the end of the text or the first character that is
    /// whitespace, a control character, one of ``' " ` ( ) [ ] { } < > , ;
    /// = :``, or a non-ASCII character that is not alphanumeric. Every
    /// character that can precede a path start is in that set, so a token
    /// never holds the start of another and where it ends never depends on
    /// what follows: that is what makes redaction idempotent. (A `:` ends
    /// it so `a.rs:12:5` stays prose after the path and `PATH`-style lists
    /// split.) Trailing `.`, `!` and `?` are then given back to the prose,
    /// except that a final `.` or `..` segment stays in the path
    /// (`/srv/work/..` is outside) and a final segment of three or more
    /// dots goes back whole (an ellipsis).
    ///
    /// **Rendering.** A token lexically inside the root becomes
    /// [`WORKDIR_MARKER`] plus its normalised relative path (a trailing `/`
    /// kept); a token that starts with a root spelling but lies outside it
    /// (a sibling `/srv/work2/x`, a `/srv/work/../etc` escape) becomes
    /// [`OUTSIDE_MARKER`], as does any other token of two or more segments
    /// (`/etc/passwd`, `/home/u/.ssh/id_rsa`). A one-segment token outside
    /// the root (`/usr`, `/api`) is prose and stays.
    ///
    /// When the whole text is one token and gives no punctuation back, it
    /// is rendered as one path: inside as above, anything else — one
    /// segment included — as [`OUTSIDE_MARKER`]. (`/srv/repo2/x.` is a
    /// token plus a full stop: `<outside-workdir>.`.) An [informative]
    /// redactor renders each token it would replace by [`OUTSIDE_MARKER`]
    /// as its rules say instead.
    ///
    /// [informative]: Redactor::informative
    ///
    /// Compared with the reference (§12.2) this is stronger, never weaker:
    /// backticks, `;`, `>`, non-ASCII punctuation and `file:///` also start
    /// paths, `..` escapes are caught and outside paths are redacted.
    /// Running it twice changes nothing more. Cost is linear in `text` for
    /// a given redactor.
    #[must_use]
    pub fn text(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        if self.is_path_token(text) {
            self.render(text, true, &mut out);
            return out;
        }
        let mut copied = 0;
        let mut at = 0;
        while let Some(offset) = text[at..].find('/') {
            let start = at + offset;
            if !is_path_start(text, start) {
                at = start + 1;
                continue;
            }
            let end = self.token_end(text, start);
            out.push_str(&text[copied..start]);
            self.render(&text[start..end], false, &mut out);
            copied = end;
            at = end;
        }
        out.push_str(&text[copied..]);
        out
    }

    /// A string found in a structured value, outside the path keys.
    fn string(&self, text: &str) -> String {
        if self.is_path_token(text) {
            self.path(text)
        } else {
            self.text(text)
        }
    }

    /// Applies the key-specific rules of [`Redactor::value`] to `entry`.
    fn keyed(&self, key: &str, entry: &mut Value) {
        match entry {
            Value::String(text) if PATH_KEYS.contains(&key) => *text = self.path(text),
            Value::Array(items) if PATH_LIST_KEYS.contains(&key) => {
                for item in items {
                    match item {
                        Value::String(text) => *text = self.path(text),
                        other => self.value(other),
                    }
                }
            }
            other => self.value(other),
        }
    }

    /// Whether all of `text` is one absolute path token, nothing given back.
    fn is_path_token(&self, text: &str) -> bool {
        text.starts_with('/') && self.token_end(text, 0) == text.len()
    }

    /// The end of the token starting at the `/` at `start`, trailing
    /// punctuation given back.
    fn token_end(&self, text: &str, start: usize) -> usize {
        let rest = &text[start..];
        let floor = start
            + self
                .roots
                .iter()
                .find(|root| rest.starts_with(&root.spelling))
                .map_or(1, |root| root.spelling.len());
        let mut end = floor;
        for c in text[floor..].chars() {
            if ends_token(c) {
                break;
            }
            end += c.len_utf8();
        }
        // Only ASCII is given back, so stepping back by bytes stays on a
        // character boundary.
        while end > floor {
            let kept = &text[start..end];
            let segment = &kept[kept.rfind('/').map_or(0, |slash| slash + 1)..];
            let dots = !segment.is_empty() && segment.bytes().all(|b| b == b'.');
            if dots && segment.len() <= 2 {
                // A final `.` or `..` is a path step, not a full stop:
                // giving it back would turn `/srv/work/..` into the root.
                break;
            } else if dots {
                // An ellipsis after a directory goes back whole.
                end = (end - segment.len()).max(floor);
            } else if kept.ends_with(TRAILING_PUNCTUATION) {
                end -= 1;
            } else {
                break;
            }
        }
        end
    }

    /// Appends the free-text rendering of one absolute path token.
    fn render(&self, token: &str, whole: bool, out: &mut String) {
        if let Some(rel) = self.relative(token) {
            out.push_str(WORKDIR_MARKER);
            for segment in &rel {
                out.push('/');
                out.push_str(segment);
            }
            // Prose keeps a directory's trailing slash (`<workdir>/src/`);
            // `/` itself is just the root.
            if token.ends_with('/') && !token.trim_end_matches('/').is_empty() {
                out.push('/');
            }
        } else if whole
            || token
                .split('/')
                .filter(|segment| !segment.is_empty())
                .count()
                >= 2
            || self
                .roots
                .iter()
                .any(|root| token.starts_with(&root.spelling))
        {
            out.push_str(&self.outside(token));
        } else {
            out.push_str(token);
        }
    }

    /// How absolute `path`, which lies under no root, is shown (see
    /// [`Redactor::informative`]).
    fn outside(&self, path: &str) -> String {
        let Outside::Informative { home } = &self.outside else {
            return OUTSIDE_MARKER.to_owned();
        };
        let segments = normalize(path);
        let above_a_root = self
            .roots
            .iter()
            .any(|root| starts_with(&root.segments, &segments));
        let Some(last) = segments.last() else {
            return OUTSIDE_MARKER.to_owned();
        };
        if above_a_root {
            OUTSIDE_MARKER.to_owned()
        } else if is_system_location(&segments) {
            format!("/{}", segments.join("/"))
        } else if let Some(below) = home
            .as_ref()
            .filter(|home| starts_with(&segments, home))
            .map(|home| &segments[home.len()..])
        {
            below.iter().fold("~".to_owned(), |shown, segment| {
                format!("{shown}/{segment}")
            })
        } else {
            format!("{OUTSIDE_MARKER}{ELIDED}{last}")
        }
    }

    /// The segments of absolute `path` below the longest root spelling it
    /// lies under, lexically.
    fn relative<'t>(&self, path: &'t str) -> Option<Vec<&'t str>> {
        let mut segments = normalize(path);
        let root = self
            .roots
            .iter()
            .find(|root| starts_with(&segments, &root.segments))?;
        segments.drain(..root.segments.len());
        Some(segments)
    }
}

/// Lexical normalisation of an absolute path into its segments; `..` at the
/// top stays at `/`, as the kernel resolves it.
fn normalize(path: &str) -> Vec<&str> {
    let mut segments = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            name => segments.push(name),
        }
    }
    segments
}

/// Whether the segments `path` begin with the segments `prefix`.
fn starts_with<P: AsRef<str>, Q: AsRef<str>>(path: &[P], prefix: &[Q]) -> bool {
    prefix.len() <= path.len()
        && prefix
            .iter()
            .zip(path)
            .all(|(p, s)| p.as_ref() == s.as_ref())
}

/// Whether a normalised absolute path is a well-known system location
/// ([`SYSTEM_TREES`], [`SYSTEM_DEVICES`]).
fn is_system_location(segments: &[&str]) -> bool {
    match segments {
        [tree, ..] if SYSTEM_TREES.contains(tree) => true,
        ["dev", device] => SYSTEM_DEVICES.contains(device),
        _ => false,
    }
}

/// Whether relative `path` reaches above its starting directory.
fn climbs_above_start(path: &str) -> bool {
    let mut depth: usize = 0;
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => match depth.checked_sub(1) {
                Some(up) => depth = up,
                None => return true,
            },
            _ => depth += 1,
        }
    }
    false
}

/// The path-start rule of [`Redactor::text`] for the `/` at byte `at`.
fn is_path_start(text: &str, at: usize) -> bool {
    let before = &text[..at];
    let Some(previous) = before.chars().next_back() else {
        return true;
    };
    match previous {
        '\'' | '"' | '`' | '(' | '[' | '{' | '<' | ',' | ';' | '=' => true,
        '>' => !before.ends_with(WORKDIR_MARKER),
        ':' => text.as_bytes().get(at + 1) != Some(&b'/'),
        '/' => before.ends_with("://"),
        c => c.is_whitespace() || c.is_control() || !(c.is_ascii() || c.is_alphanumeric()),
    }
}

/// The token-end rule of [`Redactor::text`]: whether `c` ends a path
/// token.
fn ends_token(c: char) -> bool {
    matches!(
        c,
        '\'' | '"' | '`' | '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>' | ',' | ';' | '=' | ':'
    ) || c.is_whitespace()
        || c.is_control()
        || !(c.is_ascii() || c.is_alphanumeric())
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
