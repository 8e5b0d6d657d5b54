//! Cooperative cancellation shared by the graph, the models and the tools.
//!
//! A [`CancelToken`] is cheap to clone; cancelling it flips a flag, wakes
//! every task awaiting [`CancelToken::cancelled`] and runs the registered
//! callbacks once (the browser adapter uses one to abort an in-flight fetch).
//! Single-threaded by design: the agent runs on the browser's event loop.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

type Callback = Box<dyn FnOnce()>;

#[derive(Default)]
struct Inner {
    cancelled: Cell<bool>,
    wakers: RefCell<Vec<Waker>>,
    callbacks: RefCell<Vec<Callback>>,
}

/// A cancellation signal (like a JS `AbortSignal` with its controller).
#[derive(Clone, Default)]
pub struct CancelToken(Rc<Inner>);

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken").field("cancelled", &self.is_cancelled()).finish()
    }
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancels: wakes waiters and runs callbacks (once; later calls do nothing).
    pub fn cancel(&self) {
        if self.0.cancelled.replace(true) {
            return;
        }
        for waker in self.0.wakers.take() {
            waker.wake();
        }
        for callback in self.0.callbacks.take() {
            callback();
        }
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.get()
    }

    /// Runs `callback` on cancellation (at once if already cancelled).
    pub fn on_cancel(&self, callback: impl FnOnce() + 'static) {
        if self.is_cancelled() {
            callback();
        } else {
            self.0.callbacks.borrow_mut().push(Box::new(callback));
        }
    }

    /// A future that completes when the token is cancelled.
    pub fn cancelled(&self) -> Cancelled {
        Cancelled(self.clone())
    }
}

/// The future of [`CancelToken::cancelled`].
pub struct Cancelled(CancelToken);

impl Future for Cancelled {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.is_cancelled() {
            return Poll::Ready(());
        }
        let mut wakers = self.0 .0.wakers.borrow_mut();
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// Runs `work` until it completes or `token` is cancelled (then `None`).
pub async fn until_cancelled<T>(token: &CancelToken, work: impl Future<Output = T>) -> Option<T> {
    use futures_util::future::{select, Either};
    let work = std::pin::pin!(work);
    match select(work, token.cancelled()).await {
        Either::Left((value, _)) => Some(value),
        Either::Right(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    #[test]
    fn cancel_runs_callbacks_once_and_resolves_waiters() {
        let token = CancelToken::new();
        let hits = Rc::new(Cell::new(0));
        let h = hits.clone();
        token.on_cancel(move || h.set(h.get() + 1));
        let mut waiting = Box::pin(token.cancelled());
        assert!(waiting.as_mut().now_or_never().is_none());
        token.cancel();
        token.cancel();
        assert_eq!(hits.get(), 1);
        assert!(waiting.now_or_never().is_some());
        let late = Rc::new(Cell::new(false));
        let l = late.clone();
        token.on_cancel(move || l.set(true));
        assert!(late.get(), "a callback registered after cancel runs at once");
    }

    #[test]
    fn until_cancelled_returns_none_when_cancelled_first() {
        let token = CancelToken::new();
        token.cancel();
        let out = futures_executor::block_on(until_cancelled(&token, std::future::pending::<u8>()));
        assert_eq!(out, None);
        let fresh = CancelToken::new();
        assert_eq!(futures_executor::block_on(until_cancelled(&fresh, async { 7 })), Some(7));
    }
}
