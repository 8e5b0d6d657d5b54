//! Platform shims, gathered in one place with one cfg spelling: the clock,
//! randomness, sleeping and locks differ between the browser and native builds.

use std::time::Duration;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod imp {
    use std::time::Duration;

    pub fn now_ms() -> f64 {
        js_sys::Date::now()
    }

    pub fn random_f64() -> f64 {
        js_sys::Math::random()
    }

    pub fn timezone_offset_minutes() -> i32 {
        -(js_sys::Date::new_0().get_timezone_offset() as i32)
    }

    pub async fn sleep(duration: Duration) {
        let ms = duration.as_millis().min(u128::from(u32::MAX)) as u32;
        gloo_timers::future::TimeoutFuture::new(ms).await;
    }

    pub fn spawn(task: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>) -> bool {
        wasm_bindgen_futures::spawn_local(task);
        true
    }

    #[wasm_bindgen::prelude::wasm_bindgen(module = "/src/wasm/js/locks.js")]
    extern "C" {
        #[wasm_bindgen(js_name = tryLock)]
        fn try_lock_js(name: &str) -> js_sys::Promise;
        #[wasm_bindgen(js_name = isLocked)]
        fn is_locked_js(name: &str) -> js_sys::Promise;
    }

    pub async fn is_locked(name: &str) -> bool {
        wasm_bindgen_futures::JsFuture::from(is_locked_js(name)).await.ok().and_then(|v| v.as_bool()).unwrap_or(false)
    }

    /// A Web Lock: held by every tab of the origin until released.
    pub struct Lock(js_sys::Function);

    impl Drop for Lock {
        fn drop(&mut self) {
            let _ = self.0.call0(&wasm_bindgen::JsValue::NULL);
        }
    }

    #[wasm_bindgen::prelude::wasm_bindgen(module = "/src/wasm/js/text.js")]
    extern "C" {
        #[wasm_bindgen(js_name = graphemeStart)]
        fn grapheme_start_js(text: &str, index: u32) -> u32;
        #[wasm_bindgen(js_name = wordStarts)]
        fn word_starts_js(text: &str) -> Vec<u32>;
        #[wasm_bindgen(js_name = nextTask)]
        fn next_task() -> js_sys::Promise;
    }

    pub async fn yield_now() {
        let _ = wasm_bindgen_futures::JsFuture::from(next_task()).await;
    }

    pub fn word_starts_utf16(text: &str) -> Vec<u32> {
        word_starts_js(text)
    }

    pub fn grapheme_start(text: &str, at: usize) -> usize {
        // A boundary depends on what precedes it and on the one character
        // after it: the text up to a few characters past `at` is enough.
        let end = text[at..].char_indices().nth(4).map_or(text.len(), |(i, _)| at + i);
        let window = &text[..end];
        let index = window[..at].encode_utf16().count();
        let start = grapheme_start_js(window, index as u32) as usize;
        let mut units = 0;
        for (offset, c) in window.char_indices() {
            if units >= start {
                return offset;
            }
            units += c.len_utf16();
        }
        at
    }

    pub fn lowercase(text: &str) -> String {
        js_sys::JsString::from(text).to_lower_case().into()
    }

    pub async fn try_lock(name: &str) -> Option<Lock> {
        use wasm_bindgen::JsCast;
        let release = wasm_bindgen_futures::JsFuture::from(try_lock_js(name)).await.ok()?;
        release.dyn_into::<js_sys::Function>().ok().map(Lock)
    }
}

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
mod imp {
    use std::cell::Cell;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    pub fn now_ms() -> f64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    }

    thread_local! {
        static STATE: Cell<u64> = Cell::new(
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64) | 1,
        );
    }

    /// xorshift64*: plenty for jitter and ids, not for secrets.
    pub fn random_f64() -> f64 {
        STATE.with(|s| {
            let mut x = s.get();
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            s.set(x);
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
        })
    }

    pub async fn sleep(duration: Duration) {
        futures_timer::Delay::new(duration).await;
    }

    pub fn spawn(_task: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>) -> bool {
        false
    }

    pub async fn yield_now() {}

    pub fn timezone_offset_minutes() -> i32 {
        0
    }

    thread_local! {
        static HELD: std::cell::RefCell<std::collections::HashSet<String>> = Default::default();
    }

    /// A lock within this thread (native runs are single-threaded per agent).
    pub struct Lock(String);

    impl Drop for Lock {
        fn drop(&mut self) {
            HELD.with(|h| h.borrow_mut().remove(&self.0));
        }
    }

    pub async fn try_lock(name: &str) -> Option<Lock> {
        HELD.with(|h| h.borrow_mut().insert(name.to_owned())).then(|| Lock(name.to_owned()))
    }

    pub async fn is_locked(name: &str) -> bool {
        HELD.with(|h| h.borrow().contains(name))
    }

    pub fn grapheme_start(text: &str, at: usize) -> usize {
        let mut cursor = unicode_segmentation::GraphemeCursor::new(at, text.len(), true);
        match cursor.is_boundary(text, 0) {
            Ok(true) => at,
            _ => cursor.prev_boundary(text, 0).ok().flatten().unwrap_or(0),
        }
    }

    pub fn lowercase(text: &str) -> String {
        text.to_lowercase()
    }

    pub fn word_starts_utf16(text: &str) -> Vec<u32> {
        super::icu::word_starts(&text.encode_utf16().collect::<Vec<u16>>())
    }
}

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
mod icu;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> f64 {
    imp::now_ms()
}

/// A uniformly distributed number in `[0, 1)`.
pub fn random_f64() -> f64 {
    imp::random_f64()
}

/// Minutes the local time zone is ahead of UTC (0 natively).
pub fn timezone_offset_minutes() -> i32 {
    imp::timezone_offset_minutes()
}

/// Waits `duration` without blocking the event loop.
pub async fn sleep(duration: Duration) {
    imp::sleep(duration).await
}

/// Gives the event loop back for a moment (the browser's next task: input
/// and rendering come first); natively a no-op.
pub async fn yield_now() {
    imp::yield_now().await
}

/// Runs `task` in the background on the browser's event loop and says so;
/// natively there is no event loop to run it on: it is dropped and `false`
/// comes back (callers then do the work when it is asked for).
pub fn spawn(task: impl std::future::Future<Output = ()> + 'static) -> bool {
    imp::spawn(Box::pin(task))
}

/// A lock held until it is dropped: across every tab of the origin in the
/// browser (the Web Locks API), within the thread natively.
pub struct Lock {
    _held: imp::Lock,
}

/// Takes the lock `name` if nobody holds it, without waiting; `None` when
/// another tab (or another call) holds it.
pub async fn try_lock(name: &str) -> Option<Lock> {
    imp::try_lock(name).await.map(|held| Lock { _held: held })
}

/// Whether someone holds the lock `name` (without taking it).
pub async fn is_locked(name: &str) -> bool {
    imp::is_locked(name).await
}

/// Where the grapheme (an emoji sequence, a letter with its combining marks,
/// a flag) that contains byte `at` of `text` starts: `at` itself when it is a
/// boundary. `at` must be a char boundary. The browser's `Intl.Segmenter` in
/// the package (the Unicode tables are the browser's), unicode-segmentation
/// natively; a browser test holds them to the same cases.
pub fn grapheme_start(text: &str, at: usize) -> usize {
    let (Some(before), Some(after)) = (text[..at].chars().next_back(), text[at..].chars().next()) else {
        return at.min(text.len());
    };
    if plainly_apart(before, after) {
        return at;
    }
    imp::grapheme_start(text, at)
}

/// Two characters with a grapheme boundary between them whatever surrounds
/// them: ASCII (but CR LF), CJK punctuation, kana, CJK ideographs and the
/// fullwidth forms are each a grapheme of their own unless a mark follows,
/// and none of them is a mark. Most cuts of English, Japanese and Chinese
/// text are answered here, without asking the browser.
fn plainly_apart(before: char, after: char) -> bool {
    plain(before) && plain(after) && (before, after) != ('\r', '\n')
}

/// See [`plainly_apart`] (a test checks every character of these ranges
/// against the Unicode tables).
fn plain(c: char) -> bool {
    c.is_ascii()
        || matches!(c, '\u{3000}'..='\u{3029}' | '\u{3041}'..='\u{3096}' | '\u{30A1}'..='\u{30FA}' | '\u{30FC}')
        || matches!(c, '\u{4E00}'..='\u{9FFF}' | '\u{FF01}'..='\u{FF60}')
}

/// `text` in lower case, by Unicode's full rules (final sigma included): the
/// browser's `toLowerCase` in the package (its case tables are the
/// browser's, 13 KB of `.wasm` saved), the standard library natively. ASCII
/// text never leaves WASM.
pub fn lowercase(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    imp::lowercase(text)
}

/// Where the words of `text` start, after the first (byte offsets, each on
/// a char boundary, ascending): the segments of the browser's
/// `Intl.Segmenter` with word granularity in the package (one call for the
/// whole text; its dictionaries are the browser's), the system's ICU
/// natively (the same segmentation: see `platform/icu.rs`). Without
/// `Intl.Segmenter` every character starts a word. The search index asks
/// only about runs of Han, kana and the other scripts written without
/// spaces (`search::text`); every other word is found in Rust.
pub fn word_starts(text: &str) -> Vec<usize> {
    let units = imp::word_starts_utf16(text);
    let mut out = Vec::with_capacity(units.len());
    let mut wanted = units.into_iter().peekable();
    let mut unit = 0u32;
    for (offset, c) in text.char_indices() {
        // Every start at or before this char (one inside a surrogate pair,
        // which ICU never gives, moves to the next char).
        let mut starts_here = false;
        while wanted.next_if(|w| *w <= unit).is_some() {
            starts_here = true;
        }
        if starts_here && offset > 0 {
            out.push(offset);
        }
        if wanted.peek().is_none() {
            break;
        }
        unit += c.len_utf16() as u32;
    }
    out
}

/// A random identifier: 32 hex digits laid out as a UUID v4.
pub fn random_id() -> String {
    let mut words = [0u32; 4];
    for w in &mut words {
        *w = (random_f64() * 4_294_967_296.0) as u32;
    }
    words[1] = (words[1] & 0xFFFF_0FFF) | 0x4000;
    words[2] = (words[2] & 0x3FFF_FFFF) | 0x8000_0000;
    let hex: String = words.iter().map(|w| format!("{w:08x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// Runs `futures` together on this thread (each polled when woken, none
/// twice after it finished); their outputs in the order given. A small
/// stand-in for `futures::future::join_all`, whose general machinery costs
/// the WASM package several kilobytes.
pub async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    use std::task::Poll;
    type Slot<F> = (std::pin::Pin<Box<F>>, Option<<F as std::future::Future>::Output>);
    let mut slots: Vec<Slot<F>> = futures.into_iter().map(|f| (Box::pin(f), None)).collect();
    std::future::poll_fn(move |cx| {
        let mut pending = false;
        for (future, output) in slots.iter_mut().filter(|(_, output)| output.is_none()) {
            match future.as_mut().poll(cx) {
                Poll::Ready(value) => *output = Some(value),
                Poll::Pending => pending = true,
            }
        }
        if pending {
            return Poll::Pending;
        }
        Poll::Ready(slots.iter_mut().filter_map(|(_, output)| output.take()).collect())
    })
    .await
}

#[cfg(all(test, not(all(target_arch = "wasm32", target_os = "unknown"))))]
mod text_tests {
    /// The shortcut answers exactly what the Unicode tables answer, for every
    /// pair of characters from the kinds that meet in real text.
    #[test]
    fn the_plain_shortcut_agrees_with_the_tables() {
        let kinds = "aZ09 .\r\n\tあかゖァヺー漢字鿿、。「：（\u{3000}\u{302A}\u{3099}\u{FF9E}\u{301}\u{200D}\u{FE0F}🇯🇵👍🏽ｶﾞ\u{1100}\u{1161}\u{11A8}가\u{0915}\u{094D}\u{0600}";
        for a in kinds.chars() {
            for b in kinds.chars() {
                let text = format!("x{a}{b}y");
                let at = 1 + a.len_utf8();
                assert_eq!(super::grapheme_start(&text, at), super::imp::grapheme_start(&text, at), "{a:?} {b:?}");
            }
        }
        // Every character the shortcut calls plain, beside each kind.
        for c in (0..=0x10FFFF).filter_map(char::from_u32).filter(|c| super::plain(*c)) {
            for k in kinds.chars() {
                for text in [format!("{c}{k}"), format!("{k}{c}")] {
                    let at = text.chars().next().map_or(0, char::len_utf8);
                    assert_eq!(super::grapheme_start(&text, at), super::imp::grapheme_start(&text, at), "{text:?}");
                }
            }
        }
    }
}

#[cfg(test)]
mod join_tests {
    use super::*;

    #[test]
    fn outputs_keep_their_order_and_slow_ones_do_not_hold_the_fast() {
        let order = std::cell::RefCell::new(Vec::new());
        let task = |n: u64| {
            let order = &order;
            async move {
                sleep(Duration::from_millis(30 - 10 * n)).await;
                order.borrow_mut().push(n);
                n * 10
            }
        };
        let outputs = futures_executor::block_on(join_all(vec![task(0), task(1), task(2)]));
        assert_eq!(outputs, [0, 10, 20], "in the order given");
        assert_eq!(*order.borrow(), [2, 1, 0], "run together: the quickest finished first");
        assert!(futures_executor::block_on(join_all(Vec::<std::future::Ready<u8>>::new())).is_empty());
    }
}
