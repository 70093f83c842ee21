//! adgen's annotations as attributes. `adgen build` reads them from the source, as it reads the
//! comments `// @diff(...)`; to the compiler they leave the item they stand before unchanged, but
//! for std::autodiff's spelling on a method (below).
extern crate proc_macro;
use proc_macro::{Delimiter, Group, Ident, Punct, Spacing, Span, TokenStream, TokenTree};

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
/// `use std::autodiff::autodiff_reverse;`, on stable Rust). Before a method, it puts the derived
/// method beside it, as std::autodiff's does (so a trait may declare it), calling the wrapper
/// `adgen build` writes, `Self::__adgen_d_f`.
#[proc_macro_attribute]
pub fn autodiff_reverse(entry: TokenStream, item: TokenStream) -> TokenStream {
    beside(entry, item, false)
}

/// `#[adgen::autodiff_forward(d_f, Dual, Dual)]`, std::autodiff's spelling of a forward-mode
/// entry; before a method, as `autodiff_reverse`.
#[proc_macro_attribute]
pub fn autodiff_forward(entry: TokenStream, item: TokenStream) -> TokenStream {
    beside(entry, item, true)
}

/// The item, and after it, where it is a method (it takes `self`), its derived method.
fn beside(entry: TokenStream, item: TokenStream, forward: bool) -> TokenStream {
    let derived = derived_method(entry, item.clone(), forward);
    let mut out = item;
    if let Some(method) = derived {
        out.extend(method);
    }
    out
}

fn is_punct(t: &TokenTree, c: char) -> bool {
    matches!(t, TokenTree::Punct(p) if p.as_char() == c)
}

fn is_ident(t: &TokenTree, name: &str) -> bool {
    matches!(t, TokenTree::Ident(i) if i.to_string() == name)
}

/// Tokens split at commas outside `<...>` (a `->` not closing one).
fn split_commas(tokens: Vec<TokenTree>) -> Vec<Vec<TokenTree>> {
    let (mut out, mut current, mut depth) = (Vec::new(), Vec::new(), 0i32);
    let mut previous_dash = false;
    for t in tokens {
        if is_punct(&t, '<') {
            depth += 1;
        } else if is_punct(&t, '>') && !previous_dash {
            depth -= 1;
        }
        previous_dash = is_punct(&t, '-');
        if depth == 0 && is_punct(&t, ',') {
            out.push(std::mem::take(&mut current));
        } else {
            current.push(t);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A parameter's type: after its first `:` that is not part of a `::`.
fn param_type(tokens: &[TokenTree]) -> Option<Vec<TokenTree>> {
    for (k, t) in tokens.iter().enumerate() {
        if let TokenTree::Punct(p) = t {
            let joined = p.spacing() == Spacing::Joint && tokens.get(k + 1).map_or(false, |n| is_punct(n, ':'));
            let after_colon = k > 0 && is_punct(&tokens[k - 1], ':');
            if p.as_char() == ':' && !joined && !after_colon {
                return Some(tokens[k + 1..].to_vec());
            }
        }
    }
    None
}

/// `&T`, `&mut T` -> `&mut T`; `*const T`, `*mut T` -> `*mut T`: a shadow in reverse mode.
fn writable(t: &[TokenTree]) -> Vec<TokenTree> {
    let mut out = Vec::new();
    if t.first().map_or(false, |f| is_punct(f, '&')) {
        out.push(t[0].clone());
        let mut k = 1;
        if t.get(1).map_or(false, |l| is_punct(l, '\'')) {  // a lifetime: `'a`
            out.extend(t[1..3].iter().cloned());
            k = 3;
        }
        out.push(TokenTree::Ident(Ident::new("mut", Span::call_site())));
        if t.get(k).map_or(false, |m| is_ident(m, "mut")) {
            k += 1;
        }
        out.extend(t[k..].iter().cloned());
    } else if t.first().map_or(false, |f| is_punct(f, '*')) {
        out.push(t[0].clone());
        out.push(TokenTree::Ident(Ident::new("mut", Span::call_site())));
        out.extend(t[2..].iter().cloned());
    } else {
        out.extend(t.iter().cloned());
    }
    out
}

fn ident(name: &str) -> TokenTree {
    TokenTree::Ident(Ident::new(name, Span::call_site()))
}

fn punct(c: char) -> TokenTree {
    TokenTree::Punct(Punct::new(c, Spacing::Alone))
}

fn group(delimiter: Delimiter, tokens: Vec<TokenTree>) -> TokenTree {
    TokenTree::Group(Group::new(delimiter, tokens.into_iter().collect()))
}

/// Types as a result: none, one, or a tuple.
fn result_of(types: Vec<Vec<TokenTree>>) -> Vec<TokenTree> {
    match types.len() {
        0 => Vec::new(),
        1 => types.into_iter().next().unwrap(),
        _ => {
            let mut inner = Vec::new();
            for (k, t) in types.into_iter().enumerate() {
                if k > 0 {
                    inner.push(punct(','));
                }
                inner.extend(t);
            }
            vec![group(Delimiter::Parenthesis, inner)]
        }
    }
}

/// `[T; n]`.
fn array(t: &[TokenTree], n: usize) -> Vec<TokenTree> {
    let mut inner = t.to_vec();
    inner.push(punct(';'));
    inner.push(TokenTree::Literal(proc_macro::Literal::usize_unsuffixed(n)));
    vec![group(Delimiter::Bracket, inner)]
}

/// The derived method of a method, shaped as adgen's wrapper of the entry (specs/abi.md,
/// "Rust": the parameters, each with its shadows or tangents, the seed; the result, then the
/// gradients of active ones), calling that wrapper (`Self::__adgen_NAME`); None for anything
/// else (a free function: its wrapper is the derived function itself).
fn derived_method(entry: TokenStream, item: TokenStream, forward: bool) -> Option<TokenStream> {
    let items: Vec<Vec<TokenTree>> = split_commas(entry.into_iter().collect());
    let name = match items.first()?.as_slice() {
        [TokenTree::Ident(i)] => i.to_string(),
        _ => return None,
    };
    let mut width = 1usize;
    let mut words: Vec<String> = Vec::new();
    for it in &items[1..] {
        match it.as_slice() {
            [TokenTree::Literal(l)] => width = l.to_string().parse().ok()?,
            [TokenTree::Ident(i)] => words.push(i.to_string()),
            _ => return None,
        }
    }
    let tokens: Vec<TokenTree> = item.into_iter().collect();
    let at = tokens.iter().position(|t| is_ident(t, "fn"))?;
    let mut head: Vec<TokenTree> = tokens[..at].iter().filter(|t| match t {  // visibility and `unsafe`
        TokenTree::Ident(i) => ["pub", "unsafe", "crate", "in", "super", "self"].contains(&i.to_string().as_str()),
        TokenTree::Group(g) => g.delimiter() == Delimiter::Parenthesis,
        _ => false,
    }).cloned().collect();
    let unsafe_ = head.iter().any(|t| is_ident(t, "unsafe"));
    head.retain(|t| !is_ident(t, "unsafe"));
    let params = match tokens.get(at + 2)? {
        TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis => g.stream(),
        _ => return None,  // (generic: its wrapper is generic too, which this does not write)
    };
    let body = tokens.iter().rposition(|t| matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace))?;
    let returns: Vec<TokenTree> = if tokens.get(at + 3).map_or(false, |t| is_punct(t, '-')) {
        tokens[at + 5..body].iter().take_while(|t| !is_ident(t, "where")).cloned().collect()
    } else {
        Vec::new()
    };
    let params = split_commas(params.into_iter().collect());
    let receiver = params.first()?;
    if !receiver.iter().any(|t| is_ident(t, "self")) || receiver.iter().any(|t| is_punct(t, ':')) {
        return None;  // (not a method taking `self`, `&self`, `&mut self`)
    }
    let self_type: Vec<TokenTree> = {
        let mut t: Vec<TokenTree> = receiver.iter().filter(|t| !is_ident(t, "self")).cloned().collect();
        if !t.first().map_or(false, |f| is_punct(f, '&')) {
            t.clear();  // (`self`, `mut self`: by value)
        }
        t.push(ident("Self"));
        t
    };
    let mut types = vec![self_type];
    for p in &params[1..] {
        types.push(param_type(p)?);
    }
    let result_activity = if !returns.is_empty() && words.len() == types.len() + 1 { words.pop() } else { None };
    if words.len() != types.len() {
        return None;  // (adgen build says what is wrong)
    }
    let (mut declared, mut passed, mut outputs) = (Vec::new(), Vec::new(), Vec::new());
    let result_type = returns.clone();
    if !result_type.is_empty() && !matches!(result_activity.as_deref(), Some("ActiveOnly") | Some("DualOnly")) {
        outputs.push(result_type.clone());
    }
    for (k, (t, word)) in types.iter().zip(&words).enumerate() {
        let primal = if k == 0 { "self".to_string() } else { format!("__adgen_{}", k) };
        declared.push((primal.clone(), t.clone()));
        passed.push(primal);
        let lanes = |declared: &mut Vec<(String, Vec<TokenTree>)>, passed: &mut Vec<String>, t: Vec<TokenTree>, n: usize| {
            for lane in 0..n {
                let shadow = format!("__adgen_d{}_{}", k, lane);
                declared.push((shadow.clone(), t.clone()));
                passed.push(shadow);
            }
        };
        match (forward, word.as_str()) {
            (false, "Duplicated") | (false, "DuplicatedOnly") => lanes(&mut declared, &mut passed, writable(t), 1),
            (false, "Active") => outputs.push(t.clone()),
            (true, "Dual") | (true, "DualOnly") => lanes(&mut declared, &mut passed, t.clone(), width),
            (true, "Dualv") => lanes(&mut declared, &mut passed, t.clone(), 1),
            (_, "Const") => {}
            _ => return None,
        }
    }
    match (forward, result_activity.as_deref()) {
        (false, Some("Active")) | (false, Some("ActiveOnly")) => {
            declared.push(("__adgen_seed".to_string(), result_type.clone()));
            passed.push("__adgen_seed".to_string());
        }
        (true, Some("Dual")) if width > 1 => outputs = vec![array(&result_type, width + 1)],
        (true, Some("Dual")) => outputs.push(result_type.clone()),
        (true, Some("DualOnly")) if width > 1 => outputs.push(array(&result_type, width)),
        (true, Some("DualOnly")) => outputs.push(result_type.clone()),
        _ => {}
    }
    // `VIS [unsafe] fn NAME(self, __adgen_1: T, ...) -> R { [unsafe] { Self::__adgen_NAME(self, ...) } }`
    let mut out: Vec<TokenTree> = Vec::new();
    out.push(punct('#'));
    out.push(group(Delimiter::Bracket, vec![ident("allow"), group(Delimiter::Parenthesis, vec![
        ident("non_snake_case"), punct(','), ident("clippy"), TokenTree::Punct(Punct::new(':', Spacing::Joint)),
        punct(':'), ident("too_many_arguments")])]));
    out.extend(head);
    if unsafe_ {
        out.push(ident("unsafe"));
    }
    out.push(ident("fn"));
    out.push(ident(&name));
    let mut list = Vec::new();
    for (k, (n, t)) in declared.iter().enumerate() {
        if k > 0 {
            list.push(punct(','));
        }
        if k == 0 {
            list.extend(t[..t.len() - 1].iter().cloned());  // (`&self`, `&mut self`, `self`)
            list.push(ident("self"));
        } else {
            list.push(ident(n));
            list.push(punct(':'));
            list.extend(t.iter().cloned());
        }
    }
    out.push(group(Delimiter::Parenthesis, list));
    let result = result_of(outputs);
    if !result.is_empty() {
        out.push(TokenTree::Punct(Punct::new('-', Spacing::Joint)));
        out.push(punct('>'));
        out.extend(result);
    }
    let mut call = vec![ident("Self"), TokenTree::Punct(Punct::new(':', Spacing::Joint)), punct(':'),
                        ident(&format!("__adgen_{}", name))];
    let mut args = Vec::new();
    for (k, n) in passed.iter().enumerate() {
        if k > 0 {
            args.push(punct(','));
        }
        args.push(ident(n));
    }
    call.push(group(Delimiter::Parenthesis, args));
    let inner = if unsafe_ { vec![ident("unsafe"), group(Delimiter::Brace, call)] } else { call };
    out.push(group(Delimiter::Brace, inner));
    Some(out.into_iter().collect())
}
