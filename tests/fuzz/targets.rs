//! The fuzz targets of issue #13: one `pub fn <target>(data: &[u8])` per input surface, shared
//! by the cargo-fuzz crate (`tests/fuzz/fuzz_targets/<target>.rs`, one libFuzzer binary each,
//! coverage-guided, nightly) and the stable smoke in CI (`tests/integration/fuzz_smoke.rs`,
//! which replays `tests/fuzz/corpus/<target>/` and a few seconds of mutations of it).
//!
//! Targets, and what each drives (public library items only: this file lives outside the crate):
//! - `api_request`: a request split into fields → `api::router::{route, query_param,
//!   parse_wait}`, `auth::table::bearer_token`, `api::json::{check_content_type, parse_json}`
//!   (wallet and compare bodies, `CompareRequest::addresses`), `eligibility::check_local`,
//!   `http::RequestId::resolve`, `ProxyTrust::client_of` (the `X-Forwarded-For` walk),
//!   `http::peers::parse_proxy_header`, and the whole contract pipeline of the edge's stand-in
//!   handler `devtools::edge::DemoHandler` (route → auth → 415/413/400 → address → `wait`).
//! - `api_key`: `auth::key::{parse, digest, display_prefix}`, `KeyDigest::{from_hex, to_hex}`,
//!   `KeyId::parse`, `AccountId::parse`, `Scopes::parse_list`, and `KeyTable::authenticate`
//!   (and `authenticate_bytes`) against a table of three keys: active, revoked, expired.
//! - `ledger_wire`: the first byte selects a JSON-RPC answer type, the rest is its body →
//!   `ledger::wire::{parse_response, parse}` of every answer the sources read, a re-serialization
//!   round trip, then the conversions to the domain model (`AccountState`, `TokenAccount`,
//!   `MintInfo`, `NonceAccount`, `StakeAccount`, `Transaction::from_wire`).
//! - `snapshot`: the first byte selects one file of a small snapshot directory, the rest
//!   replaces it → `SnapshotSource::open`, `ledger::view::build_view` (every `LedgerSource`
//!   call the fetch plan makes), direct paging calls, then the engine on the view.
//! - `engine`: the bytes decode into a bounded `WalletView` (and a second one) →
//!   `engine::analyze`, `engine::compare::compare`, `eligibility::classify_ledger`.
//!
//! Invariant: a target panics only on a library bug — every refusal of the input is an `Err`
//! it ignores; what it asserts is a promise the library documents (a routed path is the
//! route's own path, a parsed key or address re-encodes to its text, a parsed wire value
//! re-serializes into an equal value, a view keeps the fetch plan's bounds and order, a score
//! stays in its range). Setup that no input can reach (temp directory, runtime) may `expect`.
//! Deliberately absent: the real `api::ApiHandler` (it needs a whole `App`: RocksDB store,
//! compute pool, admission) and the RPC source's transport and batch matching (private to
//! `ledger::rpc`; their parsing is `wire::parse_response`, fuzzed here). The engine's decoder
//! draws every `InstructionKind` variant that exists as it is written: a variant added later
//! needs its own arm in `instruction_kind` to be fuzzed.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt::Debug;
use std::future::Future;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use serde::de::DeserializeOwned;
use serde::Serialize;
use xray::api::json::{check_content_type, parse_json, CompareRequest, WalletRequest};
use xray::api::router::{analysis_path, comparison_path, parse_wait, query_param, route};
use xray::api::{ApiError, Route};
use xray::auth::key::{self, AccountId, ApiKey, KeyDigest, KeyId, KEY_PREFIX, KEY_SECRET_LEN_BYTES};
use xray::auth::table::bearer_token;
use xray::auth::{AuthFailure, KeyRecord, KeyStatus, KeyTable, Scopes};
use xray::config::{
    BODY_BYTES_MAX, HISTORY_DEPTH_DEFAULT, RELATED_ACCOUNTS_MAX, RPC_RETRY_AFTER_S_MAX, TOKEN_ACCOUNTS_MAX, WAIT_S_MAX,
};
use xray::devtools::edge::DemoHandler;
use xray::eligibility::{check_local, classify_ledger, refused_by_account, LocalRefusal};
use xray::engine::{self, compare, scoring};
use xray::http::peers::parse_proxy_header;
use xray::http::request_id::is_valid as is_valid_request_id;
use xray::http::{ApiRequest, Body, DriverKind, Handler, Method, ProxyTrust, RequestId, StopState, ThreadContext};
use xray::labels::{Category, Labels};
use xray::ledger::instruction::{
    Instruction, InstructionIndex, InstructionKind, MintExtensionInit, Program, StakeAuthorityType, TokenAuthorityType,
};
use xray::ledger::model::{
    AccountKind, AccountState, Coverage, MintExtension, MintInfo, NonceAccount, NonceSearch, OutsiderNonce, SolChange,
    StakeAccount, TokenAccount, TokenAccountState, TokenChange, TokenProgram, Transaction, TransactionVersion,
    WalletView,
};
use xray::ledger::read::LedgerSource;
use xray::ledger::rpc::parse_retry_after_s;
use xray::ledger::snapshot::SnapshotSource;
use xray::ledger::view::{build_view, ViewOptions};
use xray::ledger::wire::{
    self, KeyedAccount, RpcRequest, RpcResponse, SignatureInfo, TransactionResult, UiAccount, UiBlock, Value,
    WithContext,
};
use xray::limits::quota::QuotaPeriod;
use xray::pubkey::{Pubkey, Signature};

// ---- api_request ------------------------------------------------------------------------

/// Separates the fields of an `api_request` input (never valid UTF-8, so no text needs it).
const FIELD_SEPARATOR: u8 = 0xFF;
/// Fields of an `api_request` input, in order: method, path, query, `Authorization`,
/// `Content-Type`, `X-Request-Id`, `X-Forwarded-For` lines, PROXY protocol header, body. The
/// body comes last so that it alone may hold the separator.
const API_FIELDS: usize = 9;
/// A peer inside the trusted proxy network, and one outside it.
const PROXY_PEER: [u8; 4] = [10, 0, 0, 1];
const DIRECT_PEER: [u8; 4] = [192, 0, 2, 7];
/// The proxy networks `ProxyTrust` believes.
const PROXY_NETWORKS: [&str; 2] = ["10.0.0.0/8", "fd00::/8"];

/// One `api_request` input, cut into the request's parts. A field the input does not reach is
/// an absent header (`None`), an empty one a header with an empty value.
struct RawRequest<'a> {
    method: Cow<'a, str>,
    path: Cow<'a, str>,
    query: Option<Cow<'a, str>>,
    authorization: Option<Cow<'a, str>>,
    content_type: Option<Cow<'a, str>>,
    request_id: Option<&'a [u8]>,
    forwarded: &'a [u8],
    proxy_header: &'a [u8],
    body: &'a [u8],
}

impl<'a> RawRequest<'a> {
    fn split(data: &'a [u8]) -> RawRequest<'a> {
        let mut fields = data.splitn(API_FIELDS, |&b| b == FIELD_SEPARATOR);
        let mut next = || fields.next();
        RawRequest {
            method: String::from_utf8_lossy(next().unwrap_or_default()),
            path: String::from_utf8_lossy(next().unwrap_or_default()),
            query: next().map(String::from_utf8_lossy),
            authorization: next().map(String::from_utf8_lossy),
            content_type: next().map(String::from_utf8_lossy),
            request_id: next(),
            forwarded: next().unwrap_or_default(),
            proxy_header: next().unwrap_or_default(),
            body: next().unwrap_or_default(),
        }
    }

    /// The request as the edge would hand it to a handler (`http::conn` reads the same parts).
    fn to_api_request(&self) -> ApiRequest {
        let mut request = ApiRequest::new(Method::from_token(&self.method), "/");
        request.path = self.path.clone().into_owned();
        request.query = self.query.clone().map(Cow::into_owned);
        request.authorization = self.authorization.clone().map(Cow::into_owned);
        request.content_type = self.content_type.clone().map(Cow::into_owned);
        request.request_id = RequestId::resolve(self.request_id);
        // The edge refuses to buffer a body past the cap and says so; the handler answers 413.
        request.body =
            if self.body.len() > BODY_BYTES_MAX { Body::TooLarge } else { Body::Complete(self.body.to_vec().into()) };
        request
    }
}

/// Every step of the contract's request pipeline on one input, one function each, then the
/// whole pipeline of the edge's stand-in handler.
pub fn api_request(data: &[u8]) {
    let raw = RawRequest::split(data);
    check_route(Method::from_token(&raw.method), &raw.path);
    check_wait(raw.query.as_deref());
    check_bearer(raw.authorization.as_deref());
    // Any answer is fine; what matters is that no header value makes it panic.
    let _ = check_content_type(raw.content_type.as_deref());
    check_bodies(raw.body);
    check_request_id(raw.request_id);
    check_client(raw.forwarded);
    check_proxy_header(raw.proxy_header);
    check_pipeline(&raw);
}

/// A matched route is the route of exactly that path; anything else is 404 or 405.
fn check_route(method: Method, path: &str) {
    match route(method, path) {
        Ok(found) => {
            assert!(found.methods().contains(&method), "{found:?} answers {method:?}");
            assert_eq!(found.has_body(), method == Method::Post, "{found:?}");
            assert_eq!(found.needs_key(), found != Route::Healthz, "{found:?}");
            assert_eq!(canonical_path(found).as_deref(), Some(path), "{found:?}");
        }
        Err(e) => assert!(matches!(e, ApiError::NotFound | ApiError::MethodNotAllowed { .. }), "{path:?}: {e:?}"),
    }
}

/// The path a route is served at: its parameter put back into the poll path, or its line in
/// `Route::PATHS`.
fn canonical_path(found: Route<'_>) -> Option<String> {
    match found {
        Route::Analysis { id } => Some(analysis_path(id)),
        Route::Comparison { pair_id } => Some(comparison_path(pair_id)),
        _ => Route::PATHS
            .iter()
            .filter_map(|line| line.split_once(' '))
            .find(|(method, path)| route(Method::from_token(method), path) == Ok(found))
            .map(|(_, path)| (*path).to_owned()),
    }
}

/// `wait` is absent, an integer up to `WAIT_S_MAX` read from the first `wait`, or a 400 naming
/// `wait`.
fn check_wait(query: Option<&str>) {
    let text = query_param(query, "wait");
    match parse_wait(query) {
        Ok(None) => assert_eq!(text, None, "{query:?}"),
        Ok(Some(seconds)) => {
            assert!(seconds <= WAIT_S_MAX, "{query:?}");
            assert_eq!(text.and_then(|t| t.parse().ok()), Some(seconds), "{query:?}");
        }
        Err(e) => assert!(matches!(e, ApiError::InvalidRequest { field: "wait", .. }), "{query:?}: {e:?}"),
    }
}

/// A bearer token is a non-empty part of the header value with no blank in it.
fn check_bearer(value: Option<&str>) {
    if let Ok(token) = bearer_token(value) {
        assert!(!token.is_empty() && !token.contains([' ', '\t']), "{token:?}");
        assert!(value.is_some_and(|v| v.contains(token)), "{token:?} not in {value:?}");
    }
}

/// Both body types, as the API parses them after the size check; accepted addresses re-encode
/// to their text.
fn check_bodies(body: &[u8]) {
    // `parse_body` refuses larger bodies before they reach the parser; so does this.
    if body.len() > BODY_BYTES_MAX {
        return;
    }
    if let Ok(request) = parse_json::<WalletRequest>(body) {
        check_address(&request.wallet);
    }
    if let Ok(request) = parse_json::<CompareRequest>(body) {
        if let Ok((a, b)) = request.addresses() {
            assert_ne!(a, b, "the pair rule let an equal pair through");
            assert_eq!((a.to_base58(), b.to_base58()), (request.wallet_a, request.wallet_b));
        }
    }
}

/// An address that parses is the canonical text of its bytes, and one `check_local` accepts is
/// on the curve; one that does not parse is refused by `check_local` for the same reason.
fn check_address(text: &str) {
    let labels = Labels::builtin();
    let checked = check_local(text, &labels);
    match Pubkey::parse(text) {
        Ok(address) => {
            assert_eq!(address.to_base58(), text, "base58 is not canonical");
            if let Ok(accepted) = checked {
                assert_eq!(accepted, address);
                assert!(address.is_on_curve(), "{text} accepted off the curve");
            }
        }
        Err(reason) => assert_eq!(checked, Err(LocalRefusal::Invalid(reason)), "{text:?}"),
    }
}

/// A valid `X-Request-Id` is echoed as sent; anything else is replaced by a valid one.
fn check_request_id(header: Option<&[u8]>) {
    let id = RequestId::resolve(header);
    assert!(is_valid_request_id(id.as_str().as_bytes()), "{id:?}");
    if let Some(value) = header.filter(|v| is_valid_request_id(v)) {
        assert_eq!(id.as_str().as_bytes(), value);
    }
}

/// The `X-Forwarded-For` walk from a trusted proxy, and from a peer that is not one (whose
/// word is never taken).
fn check_client(forwarded: &[u8]) {
    let trust = proxy_trust();
    let lines = forwarded.split(|&b| b == b'\n');
    let _ = trust.client_of(IpAddr::from(PROXY_PEER), lines.clone());
    let direct = IpAddr::from(DIRECT_PEER);
    assert_eq!(trust.client_of(direct, lines), direct, "an untrusted peer's X-Forwarded-For was believed");
}

fn proxy_trust() -> &'static ProxyTrust {
    static TRUST: OnceLock<ProxyTrust> = OnceLock::new();
    TRUST.get_or_init(|| ProxyTrust {
        networks: PROXY_NETWORKS.iter().map(|net| net.parse().expect("a valid network")).collect(),
        proxy_protocol: true,
    })
}

/// A complete PROXY protocol header consumed at least one byte; what follows it is kept.
fn check_proxy_header(buffer: &[u8]) {
    if let Ok(Some(header)) = parse_proxy_header(buffer) {
        assert!(header.rest.len() < buffer.len(), "a header of no bytes");
        assert!(buffer.ends_with(&header.rest), "the bytes after the header changed");
    }
}

/// The stand-in handler runs the contract's checks in order; its answer is JSON with a sane
/// status and only header values the edge can send.
fn check_pipeline(raw: &RawRequest<'_>) {
    let response = DEMO.with(|handler| ready(handler.handle(raw.to_api_request())));
    assert!((200..600).contains(&response.status), "status {}", response.status);
    let mut body = response.body.to_vec();
    assert!(wire::parse::<Value>(&mut body).is_ok(), "the answer is not JSON: {:?}", response.body);
    for (name, value) in &response.headers {
        assert!(!name.bytes().any(|b| b.is_ascii_uppercase()), "header name {name:?}");
        assert!(value.bytes().all(|b| (b' '..=b'~').contains(&b)), "header {name}: {value:?}");
    }
}

thread_local! {
    static DEMO: DemoHandler =
        DemoHandler::new(&ThreadContext { index: 0, driver: DriverKind::Epoll, stop: StopState::default() });
}

/// The output of a future that never waits (the stand-in has nothing behind it to wait for).
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the demo handler waited, with nothing behind it"),
    }
}

// ---- api_key ----------------------------------------------------------------------------

/// "Now" of every authentication: after each key's creation, past the expired key's expiry.
const KEYS_NOW_MS: u64 = 1_700_000_000_000;
const KEYS_CREATED_MS: u64 = KEYS_NOW_MS - 86_400_000;
/// Secrets (one byte repeated) of the table's keys; their texts are seeds of the corpus.
const ACTIVE_SECRET: u8 = 1;
const REVOKED_SECRET: u8 = 2;
const EXPIRED_SECRET: u8 = 3;

/// A key table holding one key of each state, and what authenticating each must answer.
struct IssuedKeys {
    table: KeyTable,
    keys: Vec<(String, Result<KeyId, AuthFailure>)>,
}

impl IssuedKeys {
    fn new() -> IssuedKeys {
        let table = KeyTable::new();
        let mut keys = Vec::new();
        for (secret, status, expires_at_ms) in [
            (ACTIVE_SECRET, KeyStatus::Active, None),
            (REVOKED_SECRET, KeyStatus::Revoked, None),
            (EXPIRED_SECRET, KeyStatus::Active, Some(KEYS_NOW_MS - 1)),
        ] {
            let (key, record) = key_record(secret, status, expires_at_ms);
            let expected = match (status, expires_at_ms) {
                (KeyStatus::Revoked, _) => Err(AuthFailure::Revoked),
                (_, Some(_)) => Err(AuthFailure::Expired),
                _ => Ok(record.id.clone()),
            };
            table.insert(record, KEYS_NOW_MS).expect("a valid key record");
            keys.push((key.expose_secret().to_owned(), expected));
        }
        IssuedKeys { table, keys }
    }

    /// What `authenticate` must answer for a presented token.
    fn expected(&self, token: &str) -> Result<KeyId, AuthFailure> {
        match self.keys.iter().find(|(text, _)| text == token) {
            Some((_, expected)) => expected.clone(),
            None if key::parse(token).is_ok() => Err(AuthFailure::Unknown),
            None => Err(AuthFailure::Malformed),
        }
    }

    fn check_header(&self, header: Option<&str>) {
        let verdict = self.table.authenticate(header, KEYS_NOW_MS).map(|entry| entry.id().clone());
        let expected = bearer_token(header).and_then(|token| self.expected(token));
        assert_eq!(verdict, expected, "header {header:?}");
    }

    /// A raw header value: UTF-8 ones are read as text, anything else is malformed.
    fn check_raw_header(&self, value: &[u8]) {
        let verdict = self.table.authenticate_bytes(Some(value), KEYS_NOW_MS).map(|entry| entry.id().clone());
        match std::str::from_utf8(value) {
            Ok(text) => {
                let as_text = self.table.authenticate(Some(text), KEYS_NOW_MS).map(|entry| entry.id().clone());
                assert_eq!(verdict, as_text, "{text:?}");
            }
            Err(_) => assert_eq!(verdict, Err(AuthFailure::Malformed)),
        }
    }
}

fn key_record(secret: u8, status: KeyStatus, expires_at_ms: Option<u64>) -> (ApiKey, KeyRecord) {
    let key = ApiKey::from_secret(&[secret; KEY_SECRET_LEN_BYTES]);
    let id = format!("key_{}", bs58::encode([secret; 16]).into_string());
    let record = KeyRecord {
        id: KeyId::parse(&id).expect("a valid key id"),
        account: AccountId::parse("acct_fuzz").expect("a valid account id"),
        name: "fuzz".into(),
        digest: key.digest(),
        prefix: key.display_prefix(),
        scopes: Scopes::ALL,
        status,
        created_at_ms: KEYS_CREATED_MS,
        expires_at_ms,
        revoked_at_ms: (status == KeyStatus::Revoked).then_some(KEYS_CREATED_MS + 1),
        replaced_by: None,
        rate_per_second: 50,
        burst: 100,
        quota_limit: 10_000,
        quota_period: QuotaPeriod::Month,
    };
    (key, record)
}

thread_local! {
    static KEYS: IssuedKeys = IssuedKeys::new();
}

/// The input as a key text, as a bearer header and as a raw header value.
pub fn api_key(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    check_key_text(&text);
    check_ids(&text);
    KEYS.with(|keys| {
        keys.check_header(Some(&format!("Bearer {text}")));
        keys.check_raw_header(data);
    });
}

/// Digest and display prefix never fail; a key that parses is the canonical text of its
/// secret, and its digest and prefix are the text's.
fn check_key_text(text: &str) {
    let digest = key::digest(text);
    assert_eq!(KeyDigest::from_hex(&digest.to_hex()), Some(digest));
    let prefix = key::display_prefix(text);
    assert!(prefix.starts_with(KEY_PREFIX), "{prefix:?}");
    if let Ok(parsed) = key::parse(text) {
        assert_eq!(parsed.digest(), digest);
        assert_eq!(parsed.display_prefix(), prefix);
        assert_eq!(reissued(text).as_deref(), Some(text), "two texts for one key");
    }
}

/// The key made from the secret a key text encodes.
fn reissued(text: &str) -> Option<String> {
    let payload = bs58::decode(text.strip_prefix(KEY_PREFIX)?).into_vec().ok()?;
    let secret: [u8; KEY_SECRET_LEN_BYTES] = payload.get(..KEY_SECRET_LEN_BYTES)?.try_into().ok()?;
    Some(ApiKey::from_secret(&secret).expose_secret().to_owned())
}

/// The admin side's parsers of the same kind of text: ids, digests, scope lists.
fn check_ids(text: &str) {
    if let Ok(id) = KeyId::parse(text) {
        assert_eq!(id.as_str(), text);
    }
    if let Ok(account) = AccountId::parse(text) {
        assert_eq!(account.as_str(), text);
    }
    if let Some(digest) = KeyDigest::from_hex(text) {
        assert_eq!(digest.to_hex(), text);
    }
    if let Ok(scopes) = Scopes::parse_list(text) {
        let listed: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
        assert_eq!(Scopes::parse_list(&listed.join(",")), Ok(scopes), "{text:?}");
    }
}

// ---- ledger_wire ------------------------------------------------------------------------

/// The answer types of `ledger_wire`, chosen by the low 7 bits of the first byte (modulo).
const WIRE_KINDS: u8 = 10;
/// Set in the first byte: the body is a bare result (as the fixtures' getBlock files and the
/// snapshot recorder's inputs are), not a JSON-RPC envelope.
const WIRE_BARE: u8 = 0x80;
/// The address the account conversions file an account under.
const WIRE_ACCOUNT_ADDRESS: Pubkey = Pubkey::new([7; 32]);

/// One JSON-RPC answer of the type the first byte names.
pub fn ledger_wire(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else { return };
    let bare = selector & WIRE_BARE != 0;
    let mut body = body.to_vec();
    match (selector & !WIRE_BARE) % WIRE_KINDS {
        0 => check_answer(&mut body, bare, account_info),
        1 => check_answer(&mut body, bare, multiple_accounts),
        2 => check_answer(&mut body, bare, token_accounts),
        3 => check_answer(&mut body, bare, signatures),
        4 => check_answer(&mut body, bare, transaction_result),
        5 => check_answer(&mut body, bare, block),
        6 => check_batch(&mut body),
        7 => check_error_answer(&mut body),
        8 => check_request(&mut body),
        _ => check_retry_after(&body),
    }
}

/// Parses `body` as an envelope of `T` (or a bare `T`), checks the round trip and converts
/// what parsed.
fn check_answer<T>(body: &mut [u8], bare: bool, convert: fn(&T))
where
    T: DeserializeOwned + Serialize + PartialEq + Debug,
{
    if bare {
        if let Ok(value) = wire::parse::<T>(body) {
            assert_eq!(reparsed(&value), value);
            convert(&value);
        }
        return;
    }
    let Ok(response) = wire::parse_response::<T>(body) else { return };
    let again = reparsed(&response);
    assert_eq!((&again.result, &again.error), (&response.result, &response.error));
    match response.into_result() {
        Ok(Some(result)) => convert(&result),
        Ok(None) => {}
        Err(e) => {
            let _ = (e.is_retryable(), e.to_string());
        }
    }
}

/// A parsed wire value written back and read again: the wire types read what they write.
fn reparsed<T: Serialize + DeserializeOwned>(value: &T) -> T {
    let mut bytes = wire::to_vec(value).expect("a parsed wire value serializes");
    match wire::parse(&mut bytes) {
        Ok(again) => again,
        Err(e) => panic!("a re-serialized wire value does not parse: {e}: {}", String::from_utf8_lossy(&bytes)),
    }
}

fn account_info(answer: &WithContext<Option<UiAccount>>) {
    if let Some(account) = &answer.value {
        check_account(account);
    }
}

fn multiple_accounts(answer: &WithContext<Vec<Option<UiAccount>>>) {
    answer.value.iter().flatten().for_each(check_account);
}

/// Every domain reading of an account; each keeps the account's lamports.
fn check_account(account: &UiAccount) {
    if let Some(state) = AccountState::from_wire(account) {
        assert_eq!(state.lamports, account.lamports);
        assert_eq!(state.kind == AccountKind::Program, account.executable, "{state:?}");
        let _ = refused_by_account(&state);
    }
    let address = WIRE_ACCOUNT_ADDRESS;
    if let Some(token) = TokenAccount::from_wire(address, account) {
        assert_eq!((token.address, token.lamports), (address, account.lamports));
    }
    if let Some(mint) = MintInfo::from_wire(address, account) {
        assert_eq!(mint.address, address);
        let _ = mint.permanent_delegate();
    }
    if let Some(nonce) = NonceAccount::from_wire(address, account) {
        assert_eq!(nonce.lamports, account.lamports);
    }
    if let Some(stake) = StakeAccount::from_wire(address, account) {
        assert_eq!(stake.lamports, account.lamports);
    }
}

/// As `build_view` reads them: the keyed address, then the token account.
fn token_accounts(answer: &WithContext<Vec<KeyedAccount>>) {
    for keyed in &answer.value {
        check_account(&keyed.account);
        let Ok(address) = Pubkey::parse(&keyed.pubkey) else { continue };
        if let Some(token) = TokenAccount::from_wire(address, &keyed.account) {
            assert_eq!(token.address, address);
        }
    }
}

// `&Vec`: the converter of a `Vec<SignatureInfo>` answer is a `fn(&T)` with that `T`.
#[allow(clippy::ptr_arg)]
fn signatures(answer: &Vec<SignatureInfo>) {
    for info in answer {
        if let Ok(signature) = Signature::parse(&info.signature) {
            assert_eq!(signature.to_base58(), info.signature, "base58 is not canonical");
        }
    }
}

fn transaction_result(answer: &TransactionResult) {
    check_transaction(&answer.tx, answer.slot, answer.block_time);
}

fn block(answer: &UiBlock) {
    for tx in &answer.transactions {
        check_transaction(tx, answer.parent_slot.saturating_add(1), answer.block_time);
    }
}

/// A transaction read into the model keeps its signature, slot and time; the fee payer is the
/// first key and every signer is one of its keys.
fn check_transaction(tx: &wire::TransactionWithMeta, slot: u64, block_time: Option<i64>) {
    let Some(read) = Transaction::from_wire(tx, slot, block_time) else { return };
    assert_eq!(tx.transaction.signatures.first(), Some(&read.signature.to_base58()));
    assert_eq!((read.slot, read.block_time), (slot, block_time));
    assert_eq!(read.account_keys.first(), Some(&read.fee_payer));
    assert!(read.signers.iter().all(|s| read.account_keys.contains(s)), "a signer outside the keys");
    let _ = read.failed();
}

/// A `getTransaction` batch answer: an array of envelopes, each converted.
fn check_batch(body: &mut [u8]) {
    let Ok(answers) = wire::parse::<Vec<RpcResponse<TransactionResult>>>(body) else { return };
    for answer in answers {
        if let Ok(Some(result)) = answer.into_result() {
            transaction_result(&result);
        }
    }
}

/// An envelope whose result is left raw: what a refused batch and every error object read as.
fn check_error_answer(body: &mut [u8]) {
    let Ok(answer) = wire::parse_response::<Value>(body) else { return };
    if let Err(e) = answer.into_result() {
        let _ = (e.is_retryable(), e.to_string());
    }
}

/// A JSON-RPC request, as the local JSON-RPC server (`xray ledger serve`) reads one.
fn check_request(body: &mut [u8]) {
    if let Ok(request) = wire::parse::<RpcRequest>(body) {
        let again = reparsed(&request);
        assert_eq!((&again.method, &again.params, &again.id), (&request.method, &request.params, &request.id));
    }
}

/// A `Retry-After` value as the RPC source honours it: whole seconds, bounded.
fn check_retry_after(body: &[u8]) {
    if let Some(seconds) = parse_retry_after_s(&String::from_utf8_lossy(body)) {
        assert!(seconds <= RPC_RETRY_AFTER_S_MAX);
    }
}

// ---- snapshot ---------------------------------------------------------------------------

/// The snapshot's wallet (the fee payer of the fixture transaction), its one transaction, its
/// token account and that account's mint.
const SNAPSHOT_WALLET: &str = "5p8qKVyKthA9DUb1rwQDzjcmTkaZdwN97J3LiaEywUjd";
const SNAPSHOT_SIGNATURE: &str =
    "4zExa66hUSr28i2ma6EJwEsm3nZo4VFryEyRYE5Zrr4Q6dZpP1ctzsoMqUhLnp6iHGPp5MB722rZXRBKg927WXN9";
const SNAPSHOT_TOKEN_ACCOUNT: &str = "US517G5965aydkZ46HS38QLi7UQiSojurfbQfKCELFx";
const SNAPSHOT_MINT: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
/// Just above the fixture transaction's slot.
const SNAPSHOT_SLOT: u64 = 147_558_400;
/// Page size of the direct `getSignaturesForAddress` call.
const SNAPSHOT_PAGE_LEN: u32 = 10;
/// The fixture transaction, recorded from mainnet: the snapshot's one transaction file.
const FIXTURE_TRANSACTION: &[u8] = include_bytes!("../fixtures/solana-rpc/solders-getTransaction-jsonParsed.json");

/// One file of the base snapshot: where it lives and what it holds until an input replaces it.
struct SnapshotFile {
    rel: PathBuf,
    base: Vec<u8>,
}

/// The files an input may replace, in selector order (the first byte, modulo their count).
fn snapshot_files() -> Vec<SnapshotFile> {
    let (w, s, k, m, slot) =
        (SNAPSHOT_WALLET, SNAPSHOT_SIGNATURE, SNAPSHOT_TOKEN_ACCOUNT, SNAPSHOT_MINT, SNAPSHOT_SLOT);
    let envelope = |method: &str, result: String| format!(r#"{{"jsonrpc":"2.0","id":"{method}","result":{result}}}"#);
    let files = [
        (
            "manifest.json".to_owned(),
            format!(
                r#"{{"format":"xray-snapshot","version":1,"source":"rpc","createdAtSlot":{slot},"historyDepth":1000,"wallets":["{w}"]}}"#
            ),
        ),
        (
            format!("accounts/{w}.json"),
            envelope(
                "getAccountInfo",
                format!(
                    r#"{{"context":{{"slot":{slot}}},"value":{{"lamports":5000000,"owner":"11111111111111111111111111111111","data":["","base64"],"executable":false,"rentEpoch":18446744073709551615,"space":0}}}}"#
                ),
            ),
        ),
        (
            format!("token-accounts/{w}.spl-token.json"),
            envelope(
                "getTokenAccountsByOwner",
                format!(
                    r#"{{"context":{{"slot":{slot}}},"value":[{{"pubkey":"{k}","account":{{"lamports":2039280,"owner":"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA","data":{{"program":"spl-token","parsed":{{"type":"account","info":{{"isNative":false,"mint":"{m}","owner":"{w}","state":"initialized","tokenAmount":{{"amount":"1500000","decimals":6,"uiAmount":1.5,"uiAmountString":"1.5"}}}}}},"space":165}},"executable":false,"rentEpoch":18446744073709551615,"space":165}}}}]}}"#
                ),
            ),
        ),
        (
            format!("token-accounts/{w}.spl-token-2022.json"),
            envelope("getTokenAccountsByOwner", format!(r#"{{"context":{{"slot":{slot}}},"value":[]}}"#)),
        ),
        (
            format!("signatures/{w}.json"),
            envelope(
                "getSignaturesForAddress",
                format!(
                    r#"[{{"signature":"{s}","slot":147558327,"err":null,"memo":null,"blockTime":1661417105,"confirmationStatus":"finalized"}}]"#
                ),
            ),
        ),
        (format!("transactions/{s}.json"), String::from_utf8_lossy(FIXTURE_TRANSACTION).into_owned()),
        (
            format!("accounts/{m}.json"),
            envelope(
                "getAccountInfo",
                format!(
                    r#"{{"context":{{"slot":{slot}}},"value":{{"lamports":388127047454,"owner":"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA","data":{{"program":"spl-token","parsed":{{"type":"mint","info":{{"decimals":6,"freezeAuthority":"{w}","isInitialized":true,"mintAuthority":"{w}","supply":"9000000000"}}}},"space":82}},"executable":false,"rentEpoch":18446744073709551615,"space":82}}}}"#
                ),
            ),
        ),
    ];
    files.into_iter().map(|(rel, base)| SnapshotFile { rel: PathBuf::from(rel), base: base.into_bytes() }).collect()
}

/// A snapshot directory reused by every input of one thread, with the runtime reads run on.
struct SnapshotBench {
    dir: tempfile::TempDir,
    files: Vec<SnapshotFile>,
    /// The file the previous input replaced, put back before the next input is written.
    replaced: Cell<Option<usize>>,
    runtime: tokio::runtime::Runtime,
}

impl SnapshotBench {
    fn new() -> SnapshotBench {
        let dir = tempfile::Builder::new().prefix("xray-fuzz-snapshot").tempdir().expect("a temp directory");
        let files = snapshot_files();
        for file in &files {
            write_file(dir.path(), &file.rel, &file.base);
        }
        let runtime = xray::ledger::runtime().expect("a ledger runtime");
        SnapshotBench { dir, files, replaced: Cell::new(None), runtime }
    }

    /// Puts the previous input's file back, then writes this input over file `index`.
    fn replace(&self, index: usize, contents: &[u8]) {
        if let Some(previous) = self.replaced.take() {
            let file = &self.files[previous];
            write_file(self.dir.path(), &file.rel, &file.base);
        }
        write_file(self.dir.path(), &self.files[index].rel, contents);
        self.replaced.set(Some(index));
    }
}

fn write_file(root: &Path, rel: &Path, contents: &[u8]) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("a snapshot kind directory");
    }
    std::fs::write(&path, contents).expect("a snapshot file written");
}

thread_local! {
    // libFuzzer exits without running thread-local destructors: a campaign leaves its one
    // `xray-fuzz-snapshot*` directory in the temp directory (the smoke's threads remove theirs).
    static SNAPSHOT: SnapshotBench = SnapshotBench::new();
}

/// One snapshot file replaced by the input, then the snapshot read as a job reads it.
pub fn snapshot(data: &[u8]) {
    let Some((&selector, contents)) = data.split_first() else { return };
    SNAPSHOT.with(|bench| {
        bench.replace(usize::from(selector) % bench.files.len(), contents);
        let Ok(source) = SnapshotSource::open(bench.dir.path()) else { return };
        bench.runtime.block_on(replay(&source));
    });
}

/// The fetch plan over the snapshot, the calls it pages with, and the engine on what it read.
async fn replay(source: &SnapshotSource) {
    let wallet = Pubkey::parse(SNAPSHOT_WALLET).expect("a valid wallet");
    let mint = Pubkey::parse(SNAPSHOT_MINT).expect("a valid mint");
    let signature = Signature::parse(SNAPSHOT_SIGNATURE).expect("a valid signature");
    if let Ok(view) = build_view(source, &wallet, ViewOptions::default()).await {
        check_view(&view, &wallet);
        check_engine(&view, &Labels::builtin());
    }
    if let Ok(page) = source.get_multiple_accounts(&[wallet, mint]).await {
        assert_eq!(page.value.len(), 2);
    }
    if let Ok(page) = source.get_signatures_for_address(&wallet, Some(&signature), SNAPSHOT_PAGE_LEN).await {
        assert!(page.len() <= SNAPSHOT_PAGE_LEN as usize);
    }
}

/// The fetch plan's promises: its wallet, its bounds, token accounts and mints sorted.
fn check_view(view: &WalletView, wallet: &Pubkey) {
    assert_eq!(&view.address, wallet);
    assert!(view.transactions.len() <= HISTORY_DEPTH_DEFAULT as usize);
    assert_eq!(view.coverage.transactions_read as usize, view.transactions.len());
    assert!(view.token_accounts.len() <= 2 * TOKEN_ACCOUNTS_MAX);
    assert!(view.token_accounts.windows(2).all(|w| w[0].address <= w[1].address), "token accounts unsorted");
    assert!(view.mints.len() <= RELATED_ACCOUNTS_MAX);
    assert!(view.mints.windows(2).all(|w| w[0].address < w[1].address), "mints unsorted");
    assert!(view.nonce_accounts.len() + view.stake_accounts.len() <= RELATED_ACCOUNTS_MAX);
    let _ = classify_ledger(view);
}

// ---- engine -----------------------------------------------------------------------------

/// Bounds of a decoded view: transactions, instructions and keys per transaction, and the
/// lengths of every other list and text.
const TRANSACTIONS_LEN_MAX: usize = 24;
const INSTRUCTIONS_LEN_MAX: usize = 8;
const KEYS_LEN_MAX: usize = 6;
const CHANGES_LEN_MAX: usize = 4;
const ACCOUNTS_LEN_MAX: usize = 6;
const EXTENSIONS_LEN_MAX: usize = 3;
const TEXT_CHARS_MAX: usize = 24;
/// Synthetic addresses in the key pool (besides a lookalike and labelled addresses).
const SYNTHETIC_KEYS: u8 = 6;
/// Characters texts are drawn from: plain, JSON-special, multi-byte, control, bidi.
const TEXT_CHARS: [char; 12] = ['a', 'z', '0', ' ', '"', '\\', '\n', '\0', 'é', '€', '😀', '\u{202e}'];
/// Instruction names (`parsed.type`) a decoded instruction carries.
const INSTRUCTION_NAMES: [&str; 6] = ["transfer", "approve", "setAuthority", "assign", "memo", "unknown"];
/// Token account extension names.
const EXTENSION_NAMES: [&str; 3] = ["immutableOwner", "transferHookAccount", "cpiGuard"];
/// `meta.err` of a failed decoded transaction.
const ERROR_TEXT: &str = r#"{"InstructionError":[0,{"Custom":1}]}"#;
/// Lamports of one SOL, an amount worth drawing often.
const LAMPORTS_PER_SOL: u64 = 1_000_000_000;

/// Reads a bounded view from fuzz bytes. Past the end every read is zero, so every input
/// decodes and short inputs give small views.
struct ViewReader<'a> {
    data: &'a [u8],
    pool: &'a [Pubkey],
}

impl ViewReader<'_> {
    fn byte(&mut self) -> u8 {
        let Some((&first, rest)) = self.data.split_first() else { return 0 };
        self.data = rest;
        first
    }

    /// `0..n`, for `n` in `1..=256`.
    fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n.max(1)
    }

    fn flag(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    fn raw_u64(&mut self) -> u64 {
        (0..8).fold(0, |acc, _| (acc << 8) | u64::from(self.byte()))
    }

    /// An amount, extremes often.
    fn amount(&mut self) -> u64 {
        match self.byte() % 6 {
            0 => 0,
            1 => 1,
            2 => 1_000,
            3 => LAMPORTS_PER_SOL,
            4 => u64::MAX,
            _ => self.raw_u64(),
        }
    }

    fn slot(&mut self) -> u64 {
        match self.byte() % 4 {
            0 => 0,
            1 => u64::MAX,
            2 => self.raw_u64(),
            _ => 250_000_000 + u64::from(self.byte()) * 1_000,
        }
    }

    fn block_time(&mut self) -> Option<i64> {
        match self.byte() % 5 {
            0 => None,
            1 => Some(i64::MIN),
            2 => Some(i64::MAX),
            3 => Some(self.raw_u64() as i64),
            _ => Some(1_700_000_000 + i64::from(self.byte()) * 3_600),
        }
    }

    fn key(&mut self) -> Pubkey {
        self.pool[self.below(self.pool.len())]
    }

    fn maybe_key(&mut self) -> Option<Pubkey> {
        if self.flag() {
            Some(self.key())
        } else {
            None
        }
    }

    fn text(&mut self) -> String {
        let len = self.below(TEXT_CHARS_MAX + 1);
        (0..len).map(|_| TEXT_CHARS[self.below(TEXT_CHARS.len())]).collect()
    }

    fn pick<T: Copy>(&mut self, choices: &[T]) -> T {
        choices[self.below(choices.len())]
    }

    /// Up to `len_max` items.
    fn list<T>(&mut self, len_max: usize, mut item: impl FnMut(&mut Self) -> T) -> Vec<T> {
        let len = self.below(len_max + 1);
        (0..len).map(|_| item(self)).collect()
    }
}

/// The addresses views are made of: synthetic ones, a lookalike of the first (same first and
/// last characters: address poisoning), and the first builtin label of each category.
fn key_pool() -> &'static [Pubkey] {
    static POOL: OnceLock<Vec<Pubkey>> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut pool: Vec<Pubkey> = (0..SYNTHETIC_KEYS).map(|i| Pubkey::new([i.wrapping_mul(37) + 1; 32])).collect();
        let twin = lookalike(&pool[0]);
        pool.extend(twin);
        let labels = Labels::builtin();
        for category in [Category::Builtin, Category::Program, Category::Mint, Category::Entity, Category::Flagged] {
            pool.extend(labels.iter_sorted().into_iter().find(|l| l.category == category).map(|l| l.address));
        }
        pool.extend(labels.iter_sorted().into_iter().find(|l| l.has_tag("stablecoin")).map(|l| l.address));
        pool
    })
}

/// An address whose text differs from `key`'s in one middle character only.
fn lookalike(key: &Pubkey) -> Option<Pubkey> {
    let text = key.to_base58();
    let middle = text.len() / 2;
    ['2', '3', 'x', 'y'].into_iter().find_map(|c| {
        let twin = format!("{}{c}{}", text.get(..middle)?, text.get(middle + 1..)?);
        Pubkey::parse(&twin).ok().filter(|t| t != key)
    })
}

/// A decoded view (and a second one for a comparison) through the engine.
pub fn engine(data: &[u8]) {
    let pool = key_pool();
    let mut reader = ViewReader { data, pool };
    let first = reader.below(pool.len());
    let view = decode_view(&mut reader, pool[first]);
    let labels = Labels::builtin();
    let xray = check_engine(&view, &labels);
    let _ = classify_ledger(&view);
    // The second wallet is another pool entry: the API refuses to compare a wallet with itself.
    let other = pool[(first + 1 + reader.below(pool.len() - 1)) % pool.len()];
    if other == view.address {
        return;
    }
    let second = decode_view(&mut reader, other);
    check_comparison(&view, &xray, &second, &labels);
}

/// `analyze` keeps the payload's promises: references resolve, scores in their ranges and
/// bands, the worst signal caps the score, and equal input gives equal bytes.
fn check_engine(view: &WalletView, labels: &Labels) -> engine::report::XRay {
    let xray = engine::analyze(view, labels);
    assert_eq!(xray.check(), Ok(()));
    let score = &xray.score;
    assert!(score.value <= 100);
    assert_eq!(score.risk_level, scoring::risk_level(score.value));
    assert_eq!(score.confidence, scoring::confidence(&view.coverage));
    assert!((scoring::CONFIDENCE_MIN..=1.0).contains(&score.confidence), "{score:?}");
    assert_eq!(xray.dimensions.len(), scoring::DIMENSIONS.len());
    assert!(xray.dimensions.iter().all(|d| d.score <= 100), "{:?}", xray.dimensions);
    let cap = xray.signals.iter().map(|s| scoring::severity_cap(s.severity)).min().unwrap_or(100);
    assert!(score.value <= cap, "score {} above its worst signal's cap {cap}", score.value);
    let again = engine::analyze(view, labels);
    assert_eq!(payload(&xray), payload(&again), "the engine is not deterministic");
    xray
}

fn payload<T: Serialize>(value: &T) -> Vec<u8> {
    wire::to_vec(value).expect("a payload serializes")
}

/// A comparison: similarity and link strengths in [0, 1], every link cites evidence it holds.
fn check_comparison(a: &WalletView, xray_a: &engine::report::XRay, b: &WalletView, labels: &Labels) {
    let xray_b = engine::analyze(b, labels);
    let side_a = compare::Side { view: a, score: &xray_a.score, analysis_id: None };
    let side_b = compare::Side { view: b, score: &xray_b.score, analysis_id: Some("an_fuzz".into()) };
    let comparison = compare::compare(side_a, side_b, labels);
    assert!((0.0..=1.0).contains(&comparison.similarity), "similarity {}", comparison.similarity);
    assert_eq!(comparison.wallet_a.address, a.address.to_base58());
    let ids: Vec<&str> = comparison.evidence.iter().map(|e| e.id()).collect();
    for link in &comparison.links {
        assert!((0.0..=1.0).contains(&link.strength), "{link:?}");
        assert!(!link.evidence_ids.is_empty(), "{link:?}");
        assert!(link.evidence_ids.iter().all(|e| ids.contains(&e.as_str())), "{link:?}");
    }
}

fn decode_view(r: &mut ViewReader<'_>, address: Pubkey) -> WalletView {
    let account = r.flag().then(|| account_state(r));
    // Sorted as the fetch plan sorts them (`WalletView::mint` binary-searches the mints).
    let mut token_accounts = r.list(ACCOUNTS_LEN_MAX, token_account);
    token_accounts.sort_by_key(|t| t.address);
    let mut mints = r.list(ACCOUNTS_LEN_MAX, mint_info);
    mints.sort_by_key(|m| m.address);
    mints.dedup_by_key(|m| m.address);
    let nonce_accounts =
        r.list(ACCOUNTS_LEN_MAX, |r| NonceAccount { address: r.key(), authority: r.key(), lamports: r.amount() });
    let stake_accounts = r.list(ACCOUNTS_LEN_MAX, stake_account);
    let transactions = r.list(TRANSACTIONS_LEN_MAX, transaction);
    let coverage = Coverage {
        source: "fuzz".into(),
        synthetic: false,
        as_of_slot: r.slot(),
        transactions_read: transactions.len() as u32,
        transactions_missing: u32::from(r.byte()),
        history_truncated: r.flag(),
        items_skipped: u32::from(r.byte()),
        nonce_search: NonceSearch::Complete,
        outsider_nonces_found: u32::from(r.byte()),
    };
    // Read last, so inputs written before these parts existed decode as they did.
    let outsider_nonces = r.list(ACCOUNTS_LEN_MAX, |r| OutsiderNonce {
        account: NonceAccount { address: r.key(), authority: address, lamports: r.amount() },
        creation: r.flag().then(|| transaction(r)),
    });
    let funder_hop = r.flag().then(|| {
        let (address, transactions) = (r.key(), r.list(TRANSACTIONS_LEN_MAX, transaction));
        let coverage = Coverage { transactions_read: transactions.len() as u32, ..Coverage::default() };
        Box::new(WalletView { address, transactions, coverage, ..WalletView::default() })
    });
    WalletView {
        address,
        account,
        token_accounts,
        mints,
        nonce_accounts,
        stake_accounts,
        outsider_nonces,
        transactions,
        coverage,
        funder_hop,
    }
}

/// An account as `AccountState::from_wire` makes one: executable exactly when a program.
fn account_state(r: &mut ViewReader<'_>) -> AccountState {
    let kind = match r.byte() % 7 {
        0 => AccountKind::Wallet,
        1 => AccountKind::Mint,
        2 => AccountKind::TokenAccount,
        3 => AccountKind::Nonce,
        4 => AccountKind::Stake,
        5 => AccountKind::Program,
        _ => AccountKind::Data { program: r.flag().then(|| r.text()) },
    };
    AccountState {
        lamports: r.amount(),
        owner: r.key(),
        executable: kind == AccountKind::Program,
        data_len: r.amount(),
        kind,
    }
}

fn token_program(r: &mut ViewReader<'_>) -> TokenProgram {
    r.pick(&[TokenProgram::Token, TokenProgram::Token2022])
}

fn token_account(r: &mut ViewReader<'_>) -> TokenAccount {
    TokenAccount {
        address: r.key(),
        mint: r.key(),
        owner: r.key(),
        program: token_program(r),
        amount: r.amount(),
        decimals: r.byte(),
        delegate: r.maybe_key(),
        delegated_amount: r.amount(),
        close_authority: r.maybe_key(),
        state: r.pick(&[TokenAccountState::Initialized, TokenAccountState::Frozen, TokenAccountState::Uninitialized]),
        is_native: r.flag(),
        lamports: r.amount(),
        extensions: r.list(EXTENSIONS_LEN_MAX, |r| r.pick(&EXTENSION_NAMES).to_owned()),
    }
}

fn mint_info(r: &mut ViewReader<'_>) -> MintInfo {
    MintInfo {
        address: r.key(),
        program: token_program(r),
        decimals: r.byte(),
        supply: r.amount(),
        mint_authority: r.maybe_key(),
        freeze_authority: r.maybe_key(),
        extensions: r.list(EXTENSIONS_LEN_MAX, mint_extension),
    }
}

fn mint_extension(r: &mut ViewReader<'_>) -> MintExtension {
    match r.byte() % 7 {
        0 => MintExtension::PermanentDelegate { delegate: r.maybe_key() },
        1 => MintExtension::TransferHook { authority: r.maybe_key(), program_id: r.maybe_key() },
        2 => MintExtension::TransferFeeConfig {
            basis_points: u16::from(r.byte()) * 40,
            maximum_fee: r.amount(),
            authority: r.maybe_key(),
        },
        3 => MintExtension::DefaultAccountState { state: r.pick(&["frozen", "initialized", ""]).to_owned() },
        4 => MintExtension::NonTransferable,
        5 => MintExtension::MintCloseAuthority { close_authority: r.maybe_key() },
        _ => MintExtension::Other(r.text()),
    }
}

fn stake_account(r: &mut ViewReader<'_>) -> StakeAccount {
    StakeAccount {
        address: r.key(),
        staker: r.key(),
        withdrawer: r.key(),
        custodian: r.maybe_key(),
        lamports: r.amount(),
        voter: r.maybe_key(),
    }
}

/// A transaction as `Transaction::from_wire` makes one: the fee payer first among its keys,
/// signers a prefix of them, each outer instruction followed by its inner ones.
fn transaction(r: &mut ViewReader<'_>) -> Transaction {
    let mut signature = [0u8; 64];
    signature[..2].copy_from_slice(&[r.byte(), r.byte()]);
    let key_count = 1 + r.below(KEYS_LEN_MAX);
    let account_keys: Vec<Pubkey> = (0..key_count).map(|_| r.key()).collect();
    let signers = account_keys[..1 + r.below(key_count)].to_vec();
    let mut next_index = InstructionIndex { outer: 0, inner: None };
    let instructions = r.list(INSTRUCTIONS_LEN_MAX, |r| {
        let index = next_index;
        next_index = following_index(index, r.flag());
        instruction(r, index)
    });
    Transaction {
        signature: Signature(signature),
        slot: r.slot(),
        block_time: r.block_time(),
        error: r.flag().then(|| ERROR_TEXT.to_owned()),
        fee: r.amount(),
        fee_payer: account_keys[0],
        signers,
        account_keys,
        version: r.pick(&[TransactionVersion::Legacy, TransactionVersion::V0]),
        instructions,
        sol_changes: r.list(CHANGES_LEN_MAX, |r| SolChange { account: r.key(), pre: r.amount(), post: r.amount() }),
        token_changes: r.list(CHANGES_LEN_MAX, token_change),
    }
}

/// The index after `index`: the next inner instruction of the same outer one, or the next
/// outer instruction.
fn following_index(index: InstructionIndex, inner: bool) -> InstructionIndex {
    match (inner, index.inner) {
        (true, None) => InstructionIndex { outer: index.outer, inner: Some(0) },
        (true, Some(i)) => InstructionIndex { outer: index.outer, inner: Some(i + 1) },
        (false, _) => InstructionIndex { outer: index.outer + 1, inner: None },
    }
}

fn token_change(r: &mut ViewReader<'_>) -> TokenChange {
    TokenChange {
        account: r.key(),
        mint: r.key(),
        owner: r.maybe_key(),
        decimals: r.byte(),
        pre: r.amount(),
        post: r.amount(),
    }
}

/// An instruction whose program is the one its id names, as the model decodes it.
fn instruction(r: &mut ViewReader<'_>, index: InstructionIndex) -> Instruction {
    let program_id = r.key();
    Instruction {
        index,
        program_id,
        program: Program::from_id(&program_id.to_base58()),
        name: r.pick(&INSTRUCTION_NAMES).to_owned(),
        kind: instruction_kind(r),
        accounts: r.list(KEYS_LEN_MAX, ViewReader::key),
    }
}

/// Kinds `instruction_kind` draws from (every `InstructionKind` variant, in declaration order).
const INSTRUCTION_KINDS: usize = 28;

fn instruction_kind(r: &mut ViewReader<'_>) -> InstructionKind {
    use InstructionKind as K;
    match r.below(INSTRUCTION_KINDS) {
        0 => K::SystemTransfer { from: r.key(), to: r.key(), lamports: r.amount() },
        1 => K::SystemCreateAccount {
            funder: r.key(),
            account: r.key(),
            lamports: r.amount(),
            space: r.amount(),
            owner: r.key(),
        },
        2 => K::SystemAssign { account: r.key(), owner: r.key() },
        3 => K::NonceInitialize { nonce: r.key(), authority: r.key() },
        4 => K::NonceAdvance { nonce: r.key(), authority: r.key() },
        5 => K::NonceAuthorize { nonce: r.key(), authority: r.key(), new_authority: r.key() },
        6 => K::NonceWithdraw { nonce: r.key(), authority: r.key(), to: r.key(), lamports: r.amount() },
        7 => K::TokenTransfer {
            source: r.key(),
            destination: r.key(),
            authority: r.key(),
            amount: r.amount(),
            mint: r.maybe_key(),
        },
        8 => K::TokenApprove {
            account: r.key(),
            delegate: r.key(),
            owner: r.key(),
            amount: r.amount(),
            mint: r.maybe_key(),
        },
        9 => K::TokenRevoke { account: r.key(), owner: r.key() },
        10 => K::TokenSetAuthority {
            target: r.key(),
            authority_type: token_authority_type(r),
            authority: r.maybe_key(),
            new_authority: r.maybe_key(),
        },
        11 => K::TokenCloseAccount { account: r.key(), destination: r.key(), owner: r.key() },
        12 => K::TokenInitializeAccount { account: r.key(), mint: r.key(), owner: r.key() },
        13 => K::TokenInitializeMint {
            mint: r.key(),
            decimals: r.byte(),
            mint_authority: r.maybe_key(),
            freeze_authority: r.maybe_key(),
        },
        14 => K::TokenMintTo { mint: r.key(), account: r.key(), amount: r.amount(), authority: r.maybe_key() },
        15 => K::TokenBurn { account: r.key(), mint: r.key(), amount: r.amount(), authority: r.maybe_key() },
        16 => K::TokenFreeze { account: r.key(), mint: r.key(), authority: r.maybe_key() },
        17 => K::TokenThaw { account: r.key(), mint: r.key(), authority: r.maybe_key() },
        18 => K::TokenMintExtension { mint: r.key(), extension: mint_extension_init(r) },
        19 => K::StakeInitialize { stake: r.key(), staker: r.key(), withdrawer: r.key(), custodian: r.maybe_key() },
        20 => K::StakeAuthorize {
            stake: r.key(),
            authority: r.key(),
            new_authority: r.key(),
            authority_type: r.pick(&[StakeAuthorityType::Staker, StakeAuthorityType::Withdrawer]),
        },
        21 => K::StakeDelegate { stake: r.key(), vote: r.key(), authority: r.key() },
        22 => K::StakeDeactivate { stake: r.key(), authority: r.key() },
        23 => K::StakeWithdraw { stake: r.key(), to: r.key(), authority: r.key(), lamports: r.amount() },
        24 => K::AtaCreate { funder: r.key(), account: r.key(), wallet: r.key(), mint: r.key() },
        25 => K::Memo { text: r.text() },
        26 => K::Other,
        _ => K::Raw { data: r.text() },
    }
}

fn token_authority_type(r: &mut ViewReader<'_>) -> TokenAuthorityType {
    match r.byte() % 5 {
        0 => TokenAuthorityType::AccountOwner,
        1 => TokenAuthorityType::CloseAccount,
        2 => TokenAuthorityType::MintTokens,
        3 => TokenAuthorityType::FreezeAccount,
        _ => TokenAuthorityType::Other(r.text()),
    }
}

fn mint_extension_init(r: &mut ViewReader<'_>) -> MintExtensionInit {
    match r.byte() % 6 {
        0 => MintExtensionInit::PermanentDelegate { delegate: r.maybe_key() },
        1 => MintExtensionInit::TransferHook { authority: r.maybe_key(), program_id: r.maybe_key() },
        2 => MintExtensionInit::TransferFeeConfig { basis_points: u16::from(r.byte()) * 40, maximum_fee: r.amount() },
        3 => MintExtensionInit::DefaultAccountState { state: r.pick(&["frozen", "initialized"]).to_owned() },
        4 => MintExtensionInit::NonTransferable,
        _ => MintExtensionInit::MintCloseAuthority { authority: r.maybe_key() },
    }
}
