//! etcd's own authentication, turned on through the JSON gateway: a `root` user (etcd requires
//! one, with the `root` role, before it enables authentication) and a member user whose only
//! role may read and write one key prefix, the cluster's `/sluice/NAME/`.
//!
//! Once enabled, every key-value call needs a token (`/v3/auth/authenticate`): a client with
//! the cluster's certificate but no login, or the login of a user without the prefix, is
//! refused with "permission denied" or "user name is empty". Leases themselves are not
//! permission-checked by etcd 3.4 (anyone with a client certificate may grant one), but a
//! lease is only a fencing token once a key under the prefix is created with it, which only
//! the member user may do.

use super::http::b64_encode;
use super::{range_end, Etcd, EtcdError, Login};
use serde_json::json;

/// Creates `root` (role `root`, password `root`'s) and `member` with a role of the same name
/// allowed to read and write the keys under `prefix`, then enables authentication. `etcd`
/// must be a client of an etcd whose authentication is still off (a fresh one).
pub fn enable(etcd: &Etcd, root: &Login, member: &Login, prefix: &str) -> Result<(), EtcdError> {
    if root.user != "root" {
        return Err(etcd.server(
            "enable authentication",
            format!("the first user must be root, not {}", root.user),
        ));
    }
    add_user(etcd, root)?;
    add_role(etcd, "root")?;
    grant_role(etcd, "root", "root")?;
    add_user(etcd, member)?;
    add_role(etcd, &member.user)?;
    grant_prefix(etcd, &member.user, prefix)?;
    grant_role(etcd, &member.user, &member.user)?;
    etcd.call("/v3/auth/enable", "enable authentication", &json!({}))
        .map(drop)
}

/// Adds user `login` (with its password).
pub fn add_user(etcd: &Etcd, login: &Login) -> Result<(), EtcdError> {
    let body = json!({ "name": login.user, "password": login.password() });
    etcd.call(
        "/v3/auth/user/add",
        &format!("add etcd user {}", login.user),
        &body,
    )
    .map(drop)
}

/// Adds role `role` (no permissions yet).
pub fn add_role(etcd: &Etcd, role: &str) -> Result<(), EtcdError> {
    etcd.call(
        "/v3/auth/role/add",
        &format!("add etcd role {role}"),
        &json!({ "name": role }),
    )
    .map(drop)
}

/// Gives `role` read and write permission on every key under `prefix`.
pub fn grant_prefix(etcd: &Etcd, role: &str, prefix: &str) -> Result<(), EtcdError> {
    let body = json!({
        "name": role,
        "perm": {
            "permType": "READWRITE",
            "key": b64_encode(prefix.as_bytes()),
            "range_end": b64_encode(&range_end(prefix.as_bytes())),
        },
    });
    etcd.call(
        "/v3/auth/role/grant",
        &format!("grant etcd role {role} the prefix {prefix}"),
        &body,
    )
    .map(drop)
}

/// Gives `user` the role `role`.
pub fn grant_role(etcd: &Etcd, user: &str, role: &str) -> Result<(), EtcdError> {
    etcd.call(
        "/v3/auth/user/grant",
        &format!("grant etcd user {user} the role {role}"),
        &json!({ "user": user, "role": role }),
    )
    .map(drop)
}
