//! The SM's guid2lid table in a file, so that a restarted `ipoib fabric` gives the hosts their
//! LIDs back (`ipoib fabric --guid2lid FILE`), as OpenSM does with
//! `/var/cache/opensm/guid2lid` (`osm_lid_mgr.c`). The fabric crate keeps the table as data
//! (`SubnetOptions::guid2lid` in, `SmpSm::guid2lid` out); this module reads and writes it.
//!
//! The format is OpenSM's (`osm_db_pack.c`, `osm_db_files.c`): one entry per port, the port GUID
//! (a switch: its node GUID), the lowest and the highest LID of the port's range (LMC 0: the
//! same), written `0x%016x 0x%04x 0x%04x` with a blank line after each entry; numbers are read
//! as OpenSM reads them, with `strtoull(.., 0)`: hex after `0x`, octal after a leading `0`, else
//! decimal. Blank lines are skipped. Our SM gives one LID per port (LMC 0): of a range it keeps the lowest. A file that
//! does not follow the format is refused with its line and the reason, rather than half read
//! (OpenSM logs and skips a bad key or a repeated one; a table that silently lost entries would
//! renumber hosts).

use ipoib_wire::ib::lid::is_unicast_lid;
use ipoib_wire::Guid;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, ErrorKind, Write};
use std::path::{Path, PathBuf};

/// Why a guid2lid text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct ParseError {
    /// The line (from 1).
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
}

/// Why a guid2lid file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file exists but could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The file does not follow the format.
    #[error("{}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Where and why.
        source: ParseError,
    },
}

/// A number as C's `strtoull(word, .., 0)` reads a whole word: hex after `0x` or `0X`, octal
/// after a leading `0`, else decimal; digits only (no sign: `from_str_radix` would take a `+`).
fn number(word: &str) -> Option<u64> {
    let (digits, radix) = match word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None if word.len() > 1 && word.starts_with('0') => (&word[1..], 8),
        None => (word, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Reads a guid2lid text (module docs): port GUID to LID.
pub fn parse(text: &str) -> Result<BTreeMap<Guid, u16>, ParseError> {
    let mut table = BTreeMap::new();
    let mut owner: BTreeMap<u16, Guid> = BTreeMap::new();
    for (i, l) in text.lines().enumerate() {
        let line = i + 1;
        let bad = |reason: String| ParseError { line, reason };
        let words: Vec<&str> = l.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        let [g, min, max] = words[..] else {
            return Err(bad(format!(
                "{} words, not `GUID MIN_LID MAX_LID`",
                words.len()
            )));
        };
        let guid = number(g).ok_or_else(|| bad(format!("`{g}` is not a GUID")))?;
        let lid = |w: &str| {
            number(w)
                .and_then(|n| u16::try_from(n).ok())
                .filter(|&n| is_unicast_lid(n))
                .ok_or_else(|| bad(format!("`{w}` is not a unicast LID (0x0001-0xbfff)")))
        };
        let (min, max) = (lid(min)?, lid(max)?);
        if max < min {
            return Err(bad(format!("MAX_LID {max:#06x} below MIN_LID {min:#06x}")));
        }
        if table.insert(Guid(guid), min).is_some() {
            return Err(bad(format!("GUID {guid:#018x} listed twice")));
        }
        if let Some(other) = owner.insert(min, Guid(guid)) {
            return Err(bad(format!(
                "LID {min:#06x} given to {guid:#018x} and to {:#018x}",
                other.0
            )));
        }
    }
    Ok(table)
}

/// Writes `table` in OpenSM's format (module docs), in GUID order.
pub fn format(table: &BTreeMap<Guid, u16>) -> String {
    let mut s = String::new();
    for (g, l) in table {
        // Writing to a String cannot fail.
        let _ = write!(s, "0x{:016x} 0x{l:04x} 0x{l:04x}\n\n", g.0);
    }
    s
}

/// Reads the table from `path`; a file that does not exist is an empty table (the first start).
pub fn load(path: &Path) -> Result<BTreeMap<Guid, u16>, LoadError> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(source) => {
            return Err(LoadError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    parse(&text).map_err(|source| LoadError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes the table to `path` whole or not at all: into `path.tmp`, then renamed over `path`
/// (as OpenSM's `osm_db_store`); on an error the temporary file is removed.
pub fn store(path: &Path, table: &BTreeMap<Guid, u16>) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let write = || -> io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(format(table).as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    };
    write().inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// The file of a running fabric: written again whenever the SM's table changed.
#[derive(Debug)]
pub struct Guid2LidFile {
    path: PathBuf,
    written: BTreeMap<Guid, u16>,
}

impl Guid2LidFile {
    /// The file at `path`, which holds `loaded` (what [`load`] read from it).
    pub fn new(path: PathBuf, loaded: BTreeMap<Guid, u16>) -> Guid2LidFile {
        Guid2LidFile {
            path,
            written: loaded,
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `table` unless the file already holds it; true when it wrote. After a failed
    /// write the file does not hold the table: the next save tries again (the fabric saves once
    /// per sweep, so a lasting failure is told once a sweep).
    pub fn save(&mut self, table: &BTreeMap<Guid, u16>) -> io::Result<bool> {
        if *table == self.written {
            return Ok(false);
        }
        store(&self.path, table)?;
        self.written = table.clone();
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // OpenSM's own file (`osm_db_pack.c`: "0x%016" PRIx64, "0x%04x 0x%04x"; `osm_db_files.c`:
    // a blank line after each entry), with an LMC 1 range, reads back; what we write is that
    // format and reads back the same.
    #[test]
    fn opensm_format_round_trips() {
        let opensm = "0x0002c90300a1b2c1 0x0001 0x0001\n\n0x0002c90300a1b2c3 0x0004 0x0005\n\n";
        let t = parse(opensm).unwrap();
        let want: BTreeMap<Guid, u16> =
            [(Guid(0x0002c90300a1b2c1), 1), (Guid(0x0002c90300a1b2c3), 4)]
                .into_iter()
                .collect();
        assert_eq!(t, want);
        let mut ours = want.clone();
        ours.remove(&Guid(0x0002c90300a1b2c3));
        ours.insert(Guid(0x20), 0xbfff);
        let text = format(&ours);
        assert_eq!(
            text,
            "0x0000000000000020 0xbfff 0xbfff\n\n0x0002c90300a1b2c1 0x0001 0x0001\n\n"
        );
        assert_eq!(parse(&text).unwrap(), ours);
        // Decimal, no blank lines, spaces around (OpenSM refuses a line that starts with a
        // blank; read here all the same).
        assert_eq!(
            parse("  32 7 7\n").unwrap(),
            [(Guid(32), 7)].into_iter().collect()
        );
        assert_eq!(parse("").unwrap(), BTreeMap::new());
    }

    // A file edited on another system: CRLF line ends, no newline at the end, tabs.
    #[test]
    fn crlf_tabs_and_no_final_newline_are_read() {
        let t = parse("0x1 0x5 0x5\r\n\r\n0x2\t0x6\t0x6").unwrap();
        let want: BTreeMap<Guid, u16> = [(Guid(1), 5), (Guid(2), 6)].into_iter().collect();
        assert_eq!(t, want);
        let e = parse("0x1 0x5 0x5\r\n\r\n0x2 0x5 0x5\r\n").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
    }

    // OpenSM reads the numbers with strtoull(.., 0) (`osm_db_pack.c` `unpack_guid`,
    // `unpack_lids`): a leading 0 is octal, so an edited `010` is LID 8 there, and must be here
    // (else the restarted fabric and OpenSM give the port different LIDs from one file).
    #[test]
    fn numbers_read_as_strtoull_base_0() {
        let t = parse("010 010 017\n0x1A 0X1b 0x1b\n0 9 9\n").unwrap();
        let want: BTreeMap<Guid, u16> = [(Guid(8), 8), (Guid(0x1a), 0x1b), (Guid(0), 9)]
            .into_iter()
            .collect();
        assert_eq!(t, want);
        for bad in [
            "0x1 08 08",
            "0x1 +5 +5",
            "0x+1 5 5",
            "0x1 0x-5 5",
            "0x1 5x 5",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bad_lines_are_refused_with_their_number() {
        let cases = [
            ("0x1 0x1\n", 1, "2 words"),
            ("0x1 0x1 0x1\n\nzz 0x2 0x2\n", 3, "`zz` is not a GUID"),
            ("0x1 0x0 0x0\n", 1, "`0x0` is not a unicast LID"),
            ("0x1 0xc000 0xc000\n", 1, "`0xc000` is not a unicast LID"),
            ("0x1 0x10000 0x10000\n", 1, "not a unicast LID"),
            ("0x1 0x5 0x4\n", 1, "below MIN_LID"),
            ("0x1 0x5 0x5\n0x1 0x6 0x6\n", 2, "listed twice"),
            ("0x1 0x5 0x5\n\n0x2 0x5 0x5\n", 3, "LID 0x0005 given to"),
            ("0x 0x5 0x5\n", 1, "not a GUID"),
        ];
        for (text, line, why) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.reason.contains(why), "{text:?}: {e}");
        }
    }

    #[test]
    fn files_are_read_written_and_rewritten_only_on_change() {
        let dir = std::env::temp_dir().join(format!("ipoib-guid2lid-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("guid2lid");
        let _ = fs::remove_file(&path);
        assert_eq!(load(&path).unwrap(), BTreeMap::new(), "no file: empty");
        let mut f = Guid2LidFile::new(path.clone(), BTreeMap::new());
        assert!(!f.save(&BTreeMap::new()).unwrap(), "nothing to write");
        let t: BTreeMap<Guid, u16> = [(Guid(9), 3)].into_iter().collect();
        assert!(f.save(&t).unwrap());
        assert!(!f.save(&t).unwrap(), "unchanged");
        assert_eq!(load(&path).unwrap(), t);
        fs::write(&path, "0x9 0x3 0x3\n0x9 0x4 0x4\n").unwrap();
        let e = load(&path).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{}: line 2: GUID", path.display())),
            "{e}"
        );
        let e = load(&dir).unwrap_err();
        assert!(matches!(e, LoadError::Io { .. }), "a directory: {e}");
        fs::remove_dir_all(&dir).unwrap();
    }

    // A write that failed (here: the file's directory does not exist yet) is tried again at the
    // next save even with the same table: the file must end up holding it, or a restart
    // renumbers the hosts. A failed rename leaves no temporary file behind.
    #[test]
    fn a_failed_write_is_tried_again_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("ipoib-guid2lid-retry-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let path = dir.join("guid2lid");
        let t: BTreeMap<Guid, u16> = [(Guid(9), 3)].into_iter().collect();
        let mut f = Guid2LidFile::new(path.clone(), BTreeMap::new());
        assert!(f.save(&t).is_err(), "no directory");
        fs::create_dir_all(&dir).unwrap();
        assert!(f.save(&t).unwrap(), "written now");
        assert_eq!(load(&path).unwrap(), t);
        // The rename fails: a directory is where the file should be.
        let blocked = dir.join("blocked");
        fs::create_dir_all(blocked.join("x")).unwrap();
        assert!(store(&blocked, &t).is_err());
        assert!(
            !dir.join("blocked.tmp").exists(),
            "the temporary is removed"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
