//! adgen's annotations as attributes. `adgen build` reads them from the source, as it reads the
//! comments `// @diff(...)`; to the compiler they leave the item they stand before unchanged.
extern crate proc_macro;
use proc_macro::TokenStream;

/// `#[adgen::diff(loss_grad: (dup, const) -> active)]`: derived functions of the function after it.
#[proc_macro_attribute]
pub fn diff(_entries: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// `#[adgen::inactive]`: calls of the function after it carry no derivatives.
#[proc_macro_attribute]
pub fn inactive(_nothing: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// `#[adgen::derivative(f: (active) -> active)]`: the function after it is a derivative of `f`.
#[proc_macro_attribute]
pub fn derivative(_entry: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// `#[adgen::size(x = n)]`: how many elements a pointer parameter holds.
#[proc_macro_attribute]
pub fn size(_items: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// `#[adgen::autodiff_reverse(d_f, Duplicated, Active)]`, std::autodiff's spelling of a
/// reverse-mode entry, for code written for it (`use adgen::autodiff_reverse;` in place of
/// `use std::autodiff::autodiff_reverse;`, on stable Rust).
#[proc_macro_attribute]
pub fn autodiff_reverse(_entry: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// `#[adgen::autodiff_forward(d_f, Dual, Dual)]`, std::autodiff's spelling of a forward-mode entry.
#[proc_macro_attribute]
pub fn autodiff_forward(_entry: TokenStream, item: TokenStream) -> TokenStream {
    item
}
