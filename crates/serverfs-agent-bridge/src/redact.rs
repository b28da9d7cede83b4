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
//! `/proc/<pid>/root`, `/proc/<pid>/cwd` and `/proc/<pid>/fd/<n>` are read
//! as the places they lead to (`resolve`).
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
//! Two kinds of host path are looked for. The deployment's own spellings —
//! every spelling of every configured workdir root, each of their
//! ancestors, and the Bridge user's home — are found wherever they appear,
//! whatever precedes them, also percent- or JSON-escaped and with doubled
//! slashes or `/./` in them ([`Redactor::guarding`]). Any other absolute
//! path is found where a path can start (after anything but a word
//! character and a few joiners, see [`Redactor::text`]).
//!
//! What a path outside the workdir becomes depends on who reads it. In
//! events, final responses and errors it is [`OUTSIDE_MARKER`]. In the
//! approvals and questions a human must judge, an [informative]
//! redactor (the workdir's `approval_paths = "informative"`, issue 18)
//! shows well-known system locations as they are, the Bridge user's home
//! as `~`, and anything else as `<outside-workdir>/…/<last component>`;
//! never a workdir's location, a directory above one, or a user name.
//!
//! [informative]: Redactor::informative

mod resolve;
mod view;

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

use regex::{Regex, RegexBuilder};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use resolve::{Resolved, resolve};
use view::View;

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

/// Directories whose entries are named after a user (`/home/<name>`,
/// `/run/user/<uid>`…).
const HOMES: [&[&str]; 7] = [
    &["home"],
    &["Users"],
    &["var", "home"],
    &["usr", "home"],
    &["export", "home"],
    &["run", "user"],
    &["var", "run", "user"],
];

/// Rewrites host paths relative to one workdir root, known by one or more
/// spellings.
///
/// # Security
///
/// Upholds ARCHITECTURE.md invariant 4 for what it is given: after
/// [`Redactor::value`], [`Redactor::path`] or [`Redactor::text`], no
/// spelling of a workdir root or of a directory above one (of two or more
/// segments; a one-segment one where a path starts) survives, however it
/// is preceded or encoded (see [`Redactor::guarding`]), and an absolute
/// path that starts where a path can start is rendered by the rules on
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
/// assert_eq!(
///     redactor.text("curl -F f=@/srv/work/a.txt; cd|/srv/work"),
///     "curl -F f=@<workdir>/a.txt; cd|<workdir>"
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
    /// The spellings of the other workdirs' roots, normalised.
    guarded: Vec<Root>,
    /// The segments of the Bridge user's home, when it is known and is
    /// not `/`.
    home: Option<Vec<String>>,
    /// Whether paths outside the workdir are shown as a human judging an
    /// approval needs them.
    informative: bool,
    /// Every deployment spelling, as one pattern.
    spellings: Spellings,
}

/// The compiled pattern of a redactor's deployment spellings.
#[derive(Clone)]
enum Spellings {
    /// Nothing to look for.
    None,
    /// Matches any spelling, doubled slashes and `/./` allowed.
    Pattern(Regex),
    /// The pattern could not be compiled (beyond the regex size limit,
    /// which no real set of paths reaches): every text with a `/` is
    /// rendered as one [`OUTSIDE_MARKER`], failing closed.
    Unusable,
}

#[derive(Clone)]
struct Root {
    /// Lexically normalised, no trailing slash; `/` for the host root.
    spelling: String,
    segments: Vec<String>,
}

impl Root {
    /// `path` normalised, when it is absolute.
    fn of(path: &std::path::Path) -> Option<Root> {
        if !path.is_absolute() {
            return None;
        }
        let raw = path.to_string_lossy();
        let segments: Vec<String> = match resolve(&raw) {
            Resolved::Path(segments) => segments.into_iter().map(str::to_owned).collect(),
            Resolved::Opaque => return None,
        };
        let spelling = format!("/{}", segments.join("/"));
        Some(Root { spelling, segments })
    }
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
        Redactor {
            roots: normalised(roots),
            guarded: Vec::new(),
            home: None,
            informative: false,
            spellings: Spellings::None,
        }
        .compiled()
    }

    /// This redactor, also hiding the rest of the deployment: `others`,
    /// every spelling of the other configured workdirs' roots, and `home`,
    /// the Bridge user's `$HOME` (ignored when relative or `/`).
    ///
    /// A *deployment spelling* is a spelling of this workdir's root or of
    /// another's, a directory above one, or the home. One of two or more
    /// segments is found wherever it appears, whatever the character before
    /// it (`f=@/srv/work`, `cd|/srv/work`, `x/srv/work`), percent-encoded
    /// (`%2Fsrv%2Fwork`), JSON-escaped (`\/srv\/work`, `\u002fsrv…`), in a
    /// `file:` URI, or with doubled slashes and `/./` segments
    /// (`//srv//./work`); the path it begins runs to the end of its token
    /// and is rendered as any path is. A one-segment one (`/srv` above
    /// `/srv/work`, a workdir at `/app`) is found only where a path starts,
    /// since after a word it is the tail of a relative path
    /// (`src/app/page.tsx`). A path under another workdir, or at or above
    /// any workdir root, is never shown (see [`Redactor::informative`]).
    #[must_use]
    pub fn guarding<I: IntoIterator<Item = PathBuf>>(
        self,
        others: I,
        home: Option<PathBuf>,
    ) -> Redactor {
        let home = home
            .as_deref()
            .and_then(Root::of)
            .map(|home| home.segments)
            .filter(|segments| !segments.is_empty());
        Redactor {
            guarded: normalised(others),
            home,
            ..self
        }
        .compiled()
    }

    /// This redactor, showing paths outside the workdir as a person
    /// judging an approval needs them (`approval_paths = "informative"`).
    /// An absolute path outside the workdir is, in this order:
    ///
    /// * [`OUTSIDE_MARKER`] when it is `/`, lies at or above any workdir
    ///   root (`/srv` for `/srv/work`, another workdir's root), or leads
    ///   where only the kernel knows (`/proc/<pid>/cwd`, `/proc/<pid>/fd/<n>`);
    /// * as it is (normalised) under `/bin`, `/sbin`, `/usr`, `/lib`,
    ///   `/lib32`, `/lib64`, `/libx32`, `/etc`, `/proc`, `/sys`, or one of
    ///   the devices `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`,
    ///   `/dev/urandom`, `/dev/tty`, `/dev/stdin`, `/dev/stdout`,
    ///   `/dev/stderr` — unless it shares more than that top-level
    ///   directory with a workdir root (`/usr/local/x` when a workdir lies
    ///   in `/usr/local/src`), lies under another workdir, or names a user;
    /// * `~` plus the rest under the Bridge user's home (`~/.ssh/id_rsa`)
    ///   — unless it shares more than the home with a workdir root
    ///   (`~/projects/other` when a workdir is `~/projects/acme`), lies
    ///   under another workdir, or names a user;
    /// * otherwise [`OUTSIDE_MARKER`]`/…/` plus its last component
    ///   (`<outside-workdir>/…/secret.txt`), which names the file without
    ///   showing where it is — or just [`OUTSIDE_MARKER`] when that
    ///   component names a user (`/home/bob`, `/run/user/1000`).
    ///
    /// A segment *names a user* when it is the entry of `/home`, `/Users`,
    /// `/var/home`, `/usr/home`, `/export/home`, `/run/user` or
    /// `/var/run/user`, is `/root`, equals the last segment of the Bridge
    /// user's home (its user name), or starts with `user-` or `user@` and a
    /// digit (systemd's `user-1000.slice`, `user@1000.service`). A path
    /// inside the workdir is relative, as always; a shown form that would
    /// still contain a deployment spelling falls back to the next rule. The
    /// free-text form still leaves a one-segment token in prose alone
    /// (`/usr`, `/api`) unless it is above a workdir or names a user. Every
    /// rendering is stable under a second pass.
    ///
    /// ```
    /// use serverfs_agent_bridge::redact::Redactor;
    ///
    /// let redactor = Redactor::new(["/srv/work".into()])
    ///     .guarding(["/home/alice/projects/acme".into()], Some("/home/alice".into()))
    ///     .informative();
    /// assert_eq!(
    ///     redactor.text("/bin/bash -lc 'cat /home/alice/.ssh/id_rsa /srv/other/notes.txt'"),
    ///     "/bin/bash -lc 'cat ~/.ssh/id_rsa <outside-workdir>/…/notes.txt'"
    /// );
    /// assert_eq!(redactor.path("/srv"), "<outside-workdir>");
    /// assert_eq!(redactor.path("/home/alice/projects/x"), "<outside-workdir>/…/x");
    /// assert_eq!(redactor.path("/home/bob"), "<outside-workdir>");
    /// ```
    #[must_use]
    pub fn informative(self) -> Redactor {
        Redactor {
            informative: true,
            ..self
        }
    }

    /// Rebuilds the pattern of the deployment spellings.
    fn compiled(self) -> Redactor {
        let mut spellings: Vec<Vec<&str>> = Vec::new();
        for root in self.roots.iter().chain(&self.guarded) {
            for depth in 1..=root.segments.len() {
                spellings.push(root.segments[..depth].iter().map(String::as_str).collect());
            }
        }
        if let Some(home) = &self.home {
            spellings.push(home.iter().map(String::as_str).collect());
        }
        // Longest first, so the longest spelling wins where several begin;
        // equal ones side by side, so `dedup` merges them.
        spellings.sort_by(|a, b| {
            let (a_len, b_len) = (a.join("/").len(), b.join("/").len());
            b_len.cmp(&a_len).then_with(|| a.cmp(b))
        });
        spellings.dedup();
        let alternatives: Vec<String> = spellings
            .iter()
            .map(|segments| {
                // Doubled slashes and `/./` between segments, not before
                // the first: `file:///srv` keeps its `//`.
                let escaped: Vec<String> = segments.iter().map(|s| regex::escape(s)).collect();
                format!("/{}", escaped.join(r"/(?:\.?/)*"))
            })
            .collect();
        let spellings = if alternatives.is_empty() {
            Spellings::None
        } else {
            RegexBuilder::new(&alternatives.join("|"))
                .size_limit(1 << 26)
                .build()
                .map_or(Spellings::Unusable, Spellings::Pattern)
        };
        Redactor { spellings, ..self }
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
    /// An absolute path (also percent- or JSON-escaped) is resolved
    /// lexically (`//`, `.`, `..`; `/..` is `/`; `/proc/<pid>/root/x` is
    /// `/x`) and rendered relative to the longest root spelling it lies
    /// under, `.` for the root itself, [`OUTSIDE_MARKER`] when it lies
    /// under none (a sibling such as `/srv/work2` included). A relative
    /// path whose `..` segments climb above its start (`a/../../b`) is
    /// [`OUTSIDE_MARKER`]; any other relative text takes the free-text
    /// form, which leaves a plain relative path as it is.
    #[must_use]
    pub fn path(&self, text: &str) -> String {
        let view = View::new(text);
        let decoded = view.text();
        if let Spellings::Unusable = self.spellings {
            return OUTSIDE_MARKER.to_owned();
        }
        if decoded.starts_with('/') {
            match resolve(decoded) {
                Resolved::Path(segments) => match self.relative(&segments) {
                    Some(rel) => self.inside(rel, PATH_FORM),
                    None => self.outside(&segments),
                },
                Resolved::Opaque => OUTSIDE_MARKER.to_owned(),
            }
        } else if climbs_above_start(decoded) {
            OUTSIDE_MARKER.to_owned()
        } else {
            self.text(text)
        }
    }

    /// The free-text form of `text`: prose with host paths in it (a final
    /// response, a provider error message, a non-path JSON string).
    ///
    /// The text is read through its decoded view: `%2F`, `\/`, `\\/` and
    /// `\u002f` are slashes, and `\n`, `\r`, `\t`, `\"` end a token as what
    /// they stand for; the text around a rewritten path is copied as it was.
    ///
    /// **Path start.** A `/` starts a path token when a deployment spelling
    /// begins there (see [`Redactor::guarding`]), when it begins the text,
    /// or when the character before it is
    ///
    /// * whitespace, a control character, or ASCII punctuation other than
    ///   `. - _ ~ * # + ) ] }` and `/` (so `'`, `"`, `` ` ``, `(`, `[`, `{`,
    ///   `<`, `,`, `;`, `=`, `@`, `|`, `&`, `$`, `\`, `!`, `?`, `^`, `%`…);
    /// * `>`, unless it closes [`WORKDIR_MARKER`] or [`OUTSIDE_MARKER`]
    ///   (our own output is left alone);
    /// * `:`, unless the `/` is followed by another `/` and a URL scheme
    ///   precedes the `:` (an authority: `https://host/a/b` is not a path,
    ///   `://home//bob` is);
    /// * `/`, only when the text before ends with `://` (an empty URL
    ///   authority: the path of `file:///etc/passwd`);
    /// * the end of a `file://` authority (`file://localhost/etc/passwd`);
    /// * a non-ASCII character that is not alphanumeric (`«`, `→`, emoji),
    ///   except the `…` of our own `/…/`.
    ///
    /// Any other preceding character (ASCII letters and digits, `.`, `-`,
    /// `_`, `~`, `*`, `#`, `+`, closing brackets, non-ASCII letters) glues
    /// the `/` to a word, a glob or an expression, so `3/4`, `and/or`,
    /// `../x`, `src/**/x/y`, `$(pwd)/x/y` and `foo/etc/passwd` are not host
    /// paths (a deployment spelling there still is).
    ///
    /// **Token.** From its start, a token runs at least over the deployment
    /// spellings found in it (so a root containing a space still counts as
    /// one), then to the end of the text or the first character that can
    /// precede a path start, a closing bracket, or `:` — so a token never
    /// holds the start of another, which makes redaction idempotent, and
    /// `a.rs:12:5` stays prose after the path. Trailing `.`s are then given
    /// back to the prose, except that a final `.` or `..` segment stays in
    /// the path (`/srv/work/..` is outside) and a final segment of three or
    /// more dots goes back whole (an ellipsis).
    ///
    /// **Rendering.** A token is resolved as [`Redactor::path`] does. One
    /// lexically inside the root becomes [`WORKDIR_MARKER`] plus its
    /// normalised relative path (a trailing `/` kept). Any other token of
    /// two or more segments (`/etc/passwd`, `/home/u/.ssh/id_rsa`, a
    /// sibling `/srv/work2/x`, a `/srv/work/../etc` escape), or one that
    /// starts with a root spelling, lies at or above a workdir root, or
    /// names a user (`/root`), becomes [`OUTSIDE_MARKER`]. Any other
    /// one-segment token (`/usr`, `/api`) is prose and stays.
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
    /// Running it twice changes nothing more. Cost is linear in `text` for
    /// a given redactor: one decoding pass, one pass of the precompiled
    /// spelling pattern, one token scan.
    #[must_use]
    pub fn text(&self, text: &str) -> String {
        let view = View::new(text);
        let decoded = view.text();
        let hits = match &self.spellings {
            Spellings::Unusable if decoded.contains('/') => return OUTSIDE_MARKER.to_owned(),
            _ => self.hits(decoded),
        };
        let mut out = String::with_capacity(text.len());
        if decoded.starts_with('/') && self.token_end(decoded, 0, &hits) == decoded.len() {
            self.render(decoded, true, text, &mut out);
            return out;
        }
        let mut copied = 0;
        let mut at = 0;
        let mut next_hit = 0;
        while let Some(offset) = decoded[at..].find('/') {
            let start = at + offset;
            while hits.get(next_hit).is_some_and(|hit| hit.start < start) {
                next_hit += 1;
            }
            let forced = hits.get(next_hit).is_some_and(|hit| hit.start == start);
            if !forced && !is_path_start(decoded, start) {
                at = start + 1;
                continue;
            }
            let end = self.token_end(decoded, start, &hits[next_hit..]);
            let (from, to) = (view.original(start), view.original(end));
            out.push_str(&text[copied..from]);
            self.render(&decoded[start..end], false, &text[from..to], &mut out);
            copied = to;
            at = end;
        }
        out.push_str(&text[copied..]);
        out
    }

    /// A string found in a structured value, outside the path keys.
    fn string(&self, text: &str) -> String {
        let view = View::new(text);
        let decoded = view.text();
        if decoded.starts_with('/')
            && self.token_end(decoded, 0, &self.hits(decoded)) == decoded.len()
        {
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

    /// Where deployment spellings occur in decoded `text`: every one of two
    /// or more segments, a one-segment one only where a path starts.
    fn hits(&self, text: &str) -> Vec<Range<usize>> {
        let Spellings::Pattern(pattern) = &self.spellings else {
            return Vec::new();
        };
        pattern
            .find_iter(text)
            .filter(|hit| is_deep(hit.as_str()) || is_path_start(text, hit.start()))
            .map(|hit| hit.range())
            .collect()
    }

    /// Whether `shown` (a rendering) still holds a deployment spelling of
    /// two or more segments. (A one-segment one there is the shown path's
    /// own first segment, or follows our markers, `~` or a word.)
    fn exposes(&self, shown: &str) -> bool {
        let Spellings::Pattern(pattern) = &self.spellings else {
            return false;
        };
        pattern
            .find_iter(View::new(shown).text())
            .any(|hit| is_deep(hit.as_str()))
    }

    /// The end of the token starting at the `/` at `start`, trailing dots
    /// given back; `hits` are the spellings at or after `start`.
    fn token_end(&self, text: &str, start: usize, hits: &[Range<usize>]) -> usize {
        let mut floor = start + 1;
        let mut pending = hits.iter().peekable();
        let mut end = start;
        for (offset, c) in text[start..].char_indices() {
            let at = start + offset;
            while let Some(hit) = pending.next_if(|hit| hit.start <= at) {
                floor = floor.max(hit.end);
            }
            if at >= floor && ends_token(c) {
                break;
            }
            end = at + c.len_utf8();
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
            } else if kept.ends_with('.') {
                end -= 1;
            } else {
                break;
            }
        }
        end
    }

    /// Appends the free-text rendering of one decoded absolute path token,
    /// `original` being how the text spelled it.
    fn render(&self, token: &str, whole: bool, original: &str, out: &mut String) {
        let segments = match resolve(token) {
            Resolved::Opaque => {
                out.push_str(OUTSIDE_MARKER);
                return;
            }
            Resolved::Path(segments) => segments,
        };
        if let Some(rel) = self.relative(&segments) {
            // Prose keeps a directory's trailing slash (`<workdir>/src/`);
            // `/` itself is just the root.
            let slash = token.ends_with('/') && !token.trim_end_matches('/').is_empty();
            out.push_str(&self.inside(rel, TextForm { slash }));
        } else if whole || self.significant(token, &segments) {
            out.push_str(&self.outside(&segments));
        } else {
            out.push_str(original);
        }
    }

    /// Whether a token outside the workdir is a path rather than prose.
    fn significant(&self, token: &str, segments: &[&str]) -> bool {
        token
            .split('/')
            .filter(|segment| !segment.is_empty())
            .count()
            >= 2
            || self
                .roots
                .iter()
                .chain(&self.guarded)
                .any(|root| token.starts_with(&root.spelling))
            || (!segments.is_empty() && self.at_or_above_a_workdir(segments))
            || (0..segments.len()).any(|at| self.names_user(segments, at))
    }

    /// How a path inside the workdir, `rel` below its root, is shown; a
    /// relative part that would itself show a deployment spelling is cut
    /// to its last component, or dropped.
    fn inside(&self, rel: &[&str], form: impl Form) -> String {
        let full = form.inside(&rel.join("/"));
        if !self.exposes(&full) {
            return full;
        }
        let last = rel
            .last()
            .map(|last| form.inside(&format!("…/{last}")))
            .filter(|short| !self.exposes(short));
        last.unwrap_or_else(|| form.inside(""))
    }

    /// How absolute `segments`, which lie under no root, are shown (see
    /// [`Redactor::informative`]).
    fn outside(&self, segments: &[&str]) -> String {
        if !self.informative {
            return OUTSIDE_MARKER.to_owned();
        }
        let Some(last) = segments.last() else {
            return OUTSIDE_MARKER.to_owned();
        };
        if self.at_or_above_a_workdir(segments) {
            return OUTSIDE_MARKER.to_owned();
        }
        let under_other = self
            .guarded
            .iter()
            .any(|root| starts_with(segments, &root.segments));
        let names_user_from =
            |from: usize| (from..segments.len()).any(|at| self.names_user(segments, at));
        let shown = if under_other {
            None
        } else if is_system_location(segments) && !self.near_a_workdir(segments, 1) {
            Some(format!("/{}", segments.join("/"))).filter(|_| !names_user_from(0))
        } else if let Some(home) = self.home.as_ref().filter(|home| {
            starts_with(segments, home) && !self.near_a_workdir(segments, home.len())
        }) {
            let below = &segments[home.len()..];
            Some(below.iter().fold("~".to_owned(), |shown, segment| {
                format!("{shown}/{segment}")
            }))
            .filter(|_| !names_user_from(home.len()))
        } else {
            None
        };
        if let Some(shown) = shown.filter(|shown| !self.exposes(shown)) {
            return shown;
        }
        let elided = format!("{OUTSIDE_MARKER}{ELIDED}{last}");
        if self.names_user(segments, segments.len() - 1) || self.exposes(&elided) {
            OUTSIDE_MARKER.to_owned()
        } else {
            elided
        }
    }

    /// Whether `segments` are a workdir root (this one's or another's) or
    /// a directory above one.
    fn at_or_above_a_workdir(&self, segments: &[&str]) -> bool {
        self.roots
            .iter()
            .chain(&self.guarded)
            .any(|root| starts_with(&root.segments, segments))
    }

    /// Whether `segments` share more than their first `base` segments with
    /// a workdir root.
    fn near_a_workdir(&self, segments: &[&str], base: usize) -> bool {
        self.roots.iter().chain(&self.guarded).any(|root| {
            let shared = root
                .segments
                .iter()
                .zip(segments)
                .take_while(|(a, b)| a.as_str() == **b)
                .count();
            shared > base
        })
    }

    /// Whether the segment at `at` of `segments` names a user (see
    /// [`Redactor::informative`]).
    fn names_user(&self, segments: &[&str], at: usize) -> bool {
        let Some(segment) = segments.get(at) else {
            return false;
        };
        let systemd_user = ["user-", "user@"].iter().any(|prefix| {
            segment
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        });
        let bridge_user = self
            .home
            .as_ref()
            .and_then(|home| home.last())
            .is_some_and(|name| name.as_str() == *segment);
        systemd_user
            || bridge_user
            || (at == 0 && *segment == "root")
            || HOMES
                .iter()
                .any(|home| home.len() == at && starts_with(segments, home))
    }

    /// The segments of resolved `segments` below the longest root spelling
    /// they lie under.
    fn relative<'s, 't>(&self, segments: &'s [&'t str]) -> Option<&'s [&'t str]> {
        let root = self
            .roots
            .iter()
            .find(|root| starts_with(segments, &root.segments))?;
        Some(&segments[root.segments.len()..])
    }
}

/// How a path inside the workdir is written in one rendering.
trait Form: Copy {
    /// `rel` (relative, `/`-separated; empty for the root) in this form.
    fn inside(self, rel: &str) -> String;
}

/// The path form: relative, `.` for the root.
#[derive(Clone, Copy)]
struct PathForm;

const PATH_FORM: PathForm = PathForm;

impl Form for PathForm {
    fn inside(self, rel: &str) -> String {
        if rel.is_empty() {
            ".".to_owned()
        } else {
            rel.to_owned()
        }
    }
}

/// The free-text form: [`WORKDIR_MARKER`]`/rel`, a directory's trailing
/// slash kept when `slash`.
#[derive(Clone, Copy)]
struct TextForm {
    slash: bool,
}

impl Form for TextForm {
    fn inside(self, rel: &str) -> String {
        let mut out = WORKDIR_MARKER.to_owned();
        if !rel.is_empty() {
            out.push('/');
            out.push_str(rel);
        }
        if self.slash {
            out.push('/');
        }
        out
    }
}

/// The absolute entries of `paths`, normalised, deduplicated, longest
/// first.
fn normalised<I: IntoIterator<Item = PathBuf>>(paths: I) -> Vec<Root> {
    let mut roots: Vec<Root> = Vec::new();
    for root in paths.into_iter().filter_map(|path| Root::of(&path)) {
        if roots.iter().all(|known| known.spelling != root.spelling) {
            roots.push(root);
        }
    }
    roots.sort_by_key(|root| std::cmp::Reverse(root.spelling.len()));
    roots
}

/// Whether the segments `path` begin with the segments `prefix`.
fn starts_with<P: AsRef<str>, Q: AsRef<str>>(path: &[P], prefix: &[Q]) -> bool {
    prefix.len() <= path.len()
        && prefix
            .iter()
            .zip(path)
            .all(|(p, s)| p.as_ref() == s.as_ref())
}

/// Whether a matched spelling has two or more segments.
fn is_deep(spelling: &str) -> bool {
    spelling
        .split('/')
        .filter(|segment| !segment.is_empty() && *segment != ".")
        .nth(1)
        .is_some()
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

/// The path-start rule of [`Redactor::text`] for the `/` at byte `at` of
/// decoded `text` (deployment spellings aside).
fn is_path_start(text: &str, at: usize) -> bool {
    let before = &text[..at];
    let Some(previous) = before.chars().next_back() else {
        return true;
    };
    match previous {
        '/' => before.ends_with("://"),
        '>' => !(before.ends_with(WORKDIR_MARKER) || before.ends_with(OUTSIDE_MARKER)),
        '…' => ![WORKDIR_MARKER, OUTSIDE_MARKER].iter().any(|marker| {
            before
                .strip_suffix("/…")
                .is_some_and(|b| b.ends_with(marker))
        }),
        ':' => {
            text.as_bytes().get(at + 1) != Some(&b'/')
                || !ends_url_scheme(&before[..before.len() - 1])
        }
        '.' | '-' | '_' => ends_file_authority(before),
        '~' | '*' | '#' | '+' | ')' | ']' | '}' => false,
        c if c.is_ascii_alphanumeric() => ends_file_authority(before),
        c if c.is_ascii() => true,
        c => !c.is_alphanumeric(),
    }
}

/// Whether `before` ends with a URL scheme (`https`, `git+ssh`): a letter,
/// then letters, digits, `+`, `-` or `.`.
fn ends_url_scheme(before: &str) -> bool {
    let head = before
        .trim_end_matches(|c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    before[head.len()..].starts_with(|c: char| c.is_ascii_alphabetic())
}

/// Whether `before` ends with `file://` and an authority
/// (`file://localhost`): the `/` after it starts the URI's path. Looks
/// back no further than the previous `/`, so a scan stays linear.
fn ends_file_authority(before: &str) -> bool {
    let head = before.trim_end_matches(|c: char| {
        c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']' | '@' | '%')
    });
    let head = head.as_bytes();
    head.len() >= 7 && head[head.len() - 7..].eq_ignore_ascii_case(b"file://")
}

/// The token-end rule of [`Redactor::text`]: whether `c` ends a path
/// token (once past the deployment spellings in it).
fn ends_token(c: char) -> bool {
    match c {
        '/' | '.' | '-' | '_' | '~' | '*' | '#' | '+' => false,
        c if c.is_ascii_alphanumeric() => false,
        c if c.is_ascii() => true,
        c => !c.is_alphanumeric(),
    }
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
