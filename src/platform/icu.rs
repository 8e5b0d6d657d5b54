//! Word boundaries natively from the system's ICU (`libicuuc`, loaded at run
//! time), the same library family the browser's `Intl.Segmenter` runs on:
//! over the 34,866 distinct CJK runs of the search benchmark's corpus,
//! Debian's ICU 72 and Chromium 156 (ICU 78) agree on every boundary, where
//! ICU4X 2.4's dictionary segmenter differs on 24% of them (measured when
//! this was written; see docs/ARCHITECTURE.md, "Search"). Native builds are
//! for tests, so the library is found with `dlopen` rather than linked: a
//! machine without ICU fails the first segmentation with a message saying
//! what to install, and nothing else needs it.

use std::ffi::{c_char, c_int, c_void, CString};

type Open = unsafe extern "C" fn(c_int, *const c_char, *const u16, i32, *mut c_int) -> *mut c_void;
type SetText = unsafe extern "C" fn(*mut c_void, *const u16, i32, *mut c_int);
type Step = unsafe extern "C" fn(*mut c_void) -> i32;

extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
}

const RTLD_NOW: c_int = 2;
const UBRK_WORD: c_int = 1;
const UBRK_DONE: i32 = -1;

/// The three functions of ICU's break iterator this needs, and one word
/// iterator (per thread: an iterator is not shared between threads).
struct Icu {
    set_text: SetText,
    first: Step,
    next: Step,
    iterator: *mut c_void,
}

/// The library's file and its major version (ICU suffixes every C symbol
/// with it: `ubrk_open_72`).
fn library() -> Option<(CString, String)> {
    for dir in ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"] {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        let mut found: Vec<(u32, std::path::PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let major = name.strip_prefix("libicuuc.so.")?.split('.').next()?.parse().ok()?;
                Some((major, e.path()))
            })
            .collect();
        found.sort();
        if let Some((major, path)) = found.pop() {
            return Some((CString::new(path.to_str()?).ok()?, major.to_string()));
        }
    }
    None
}

fn load() -> Result<Icu, String> {
    let (path, major) = library().ok_or("no libicuuc.so.* found")?;
    // SAFETY: dlopen/dlsym are called with NUL-terminated strings; every
    // symbol is checked for null before it is cast to its C signature
    // (ICU's documented one, ubrk.h).
    unsafe {
        let handle = dlopen(path.as_ptr(), RTLD_NOW);
        if handle.is_null() {
            return Err(format!("cannot load {path:?}"));
        }
        let symbol = |name: &str| -> Result<*mut c_void, String> {
            for candidate in [format!("{name}_{major}"), name.to_owned()] {
                let c = CString::new(candidate).map_err(|e| e.to_string())?;
                let found = dlsym(handle, c.as_ptr());
                if !found.is_null() {
                    return Ok(found);
                }
            }
            Err(format!("{path:?} has no {name}"))
        };
        let open: Open = std::mem::transmute::<*mut c_void, Open>(symbol("ubrk_open")?);
        let set_text: SetText = std::mem::transmute::<*mut c_void, SetText>(symbol("ubrk_setText")?);
        let first: Step = std::mem::transmute::<*mut c_void, Step>(symbol("ubrk_first")?);
        let next: Step = std::mem::transmute::<*mut c_void, Step>(symbol("ubrk_next")?);
        let mut status: c_int = 0;
        let locale = CString::new("ja").map_err(|e| e.to_string())?;
        let iterator = open(UBRK_WORD, locale.as_ptr(), std::ptr::null(), 0, &mut status);
        if status > 0 || iterator.is_null() {
            return Err(format!("ubrk_open failed with ICU status {status}"));
        }
        Ok(Icu { set_text, first, next, iterator })
    }
}

thread_local! {
    static ICU: Result<Icu, String> = load();
}

/// The UTF-16 index of every segment start of `text` after the first, as
/// ICU's word break iterator finds them.
pub fn word_starts(text: &[u16]) -> Vec<u32> {
    ICU.with(|icu| {
        let icu = icu.as_ref().unwrap_or_else(|e| {
            panic!("native word segmentation needs ICU ({e}): install it (Debian: apt-get install libicu-dev)")
        });
        let mut out = Vec::new();
        let Ok(len) = i32::try_from(text.len()) else { return out };
        // SAFETY: the iterator lives for the thread; `text` outlives every
        // call that reads it (ICU keeps a pointer only until the next setText).
        unsafe {
            let mut status: c_int = 0;
            (icu.set_text)(icu.iterator, text.as_ptr(), len, &mut status);
            if status > 0 {
                return out;
            }
            let mut at = (icu.first)(icu.iterator);
            while at != UBRK_DONE {
                if at > 0 && at < len {
                    out.push(at as u32);
                }
                at = (icu.next)(icu.iterator);
            }
        }
        out
    })
}
