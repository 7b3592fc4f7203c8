//! etcd's own authentication, turned on through the JSON gateway: a `root` user (etcd requires
//! one, with the `root` role, before it enables authentication), a member user whose only
//! role may read and write one key prefix, the cluster's `/sluice/NAME/` (the controller's and
//! the operator's), and one user per host ([`HostGrant`]) that may read the cluster's prefix
//! but write only its own member record and the leases of the partitions it may host.
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

/// What one host's etcd user may do in cluster prefix `/sluice/NAME/`: read all of it, write
/// its member record `workers/HOST` (one key) and the partition leases `leases/P/…` of each
/// partition `P` in `leases` (its own, and those it may stand by for). Its role has the user's
/// name.
#[derive(Debug, Clone)]
pub struct HostGrant {
    /// The host's user (its name is the role's too).
    pub login: Login,
    /// The host's name (its member record's key).
    pub host: String,
    /// The protected hosts whose partition leases it may take.
    pub leases: Vec<String>,
}

/// Creates `root` (role `root`, password `root`'s) and `member` with a role of the same name
/// allowed to read and write the keys under `prefix`, then enables authentication. `etcd`
/// must be a client of an etcd whose authentication is still off (a fresh one).
pub fn enable(etcd: &Etcd, root: &Login, member: &Login, prefix: &str) -> Result<(), EtcdError> {
    enable_with_hosts(etcd, root, member, prefix, &[])
}

/// [`enable`], with a user per host as `hosts` grant them (see [`add_host`]).
pub fn enable_with_hosts(
    etcd: &Etcd,
    root: &Login,
    member: &Login,
    prefix: &str,
    hosts: &[HostGrant],
) -> Result<(), EtcdError> {
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
    for h in hosts {
        add_host(etcd, prefix, h)?;
    }
    etcd.call("/v3/auth/enable", "enable authentication", &json!({}))
        .map(drop)
}

/// Adds host `grant.host`'s user and role in the cluster of prefix `prefix` (`/sluice/NAME/`):
/// read the prefix, write `PREFIX workers/HOST` and every key under `PREFIX leases/P/` for
/// each `P` of `grant.leases`. Before authentication is on, or as root after.
pub fn add_host(etcd: &Etcd, prefix: &str, grant: &HostGrant) -> Result<(), EtcdError> {
    let role = &grant.login.user;
    add_user(etcd, &grant.login)?;
    add_role(etcd, role)?;
    grant_range(
        etcd,
        role,
        "READ",
        prefix,
        Some(&range_end(prefix.as_bytes())),
    )?;
    let record = format!("{prefix}workers/{}", grant.host);
    grant_range(etcd, role, "READWRITE", &record, None)?;
    for p in &grant.leases {
        let leases = format!("{prefix}leases/{p}/");
        grant_range(
            etcd,
            role,
            "READWRITE",
            &leases,
            Some(&range_end(leases.as_bytes())),
        )?;
    }
    grant_role(etcd, role, role)
}

/// Gives `role` the permission `perm` (`READ`, `WRITE` or `READWRITE`) on `key` alone, or on
/// `key` … `end` (exclusive) with an end.
fn grant_range(
    etcd: &Etcd,
    role: &str,
    perm: &str,
    key: &str,
    end: Option<&[u8]>,
) -> Result<(), EtcdError> {
    let mut body = json!({
        "name": role,
        "perm": { "permType": perm, "key": b64_encode(key.as_bytes()) },
    });
    if let Some(end) = end {
        body["perm"]["range_end"] = b64_encode(end).into();
    }
    etcd.call(
        "/v3/auth/role/grant",
        &format!("grant etcd role {role} {perm} on {key}"),
        &body,
    )
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
