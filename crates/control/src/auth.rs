//! Who is calling: a bearer customer access token or workspace API key,
//! resolved to its tenant, user and effective grants on every request (so
//! a revoked credential or permission takes effect at once).

use crate::error::ApiError;
use crate::grants::{Effective, GrantSet};
use crate::secrets::hash_credential;
use crate::store::Store;
use crate::store::tenants::CredentialKind;

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The caller's tenant.
    pub tenant_id: String,
    /// The acting user.
    pub user_id: String,
    /// Token or key.
    pub via: CredentialKind,
    /// The credential's id.
    pub credential_id: String,
    /// What the caller may do.
    pub grants: Effective,
}

impl Caller {
    /// 403 `permission_required` unless the caller holds `grant`.
    pub fn require(&self, grant: &str) -> Result<(), ApiError> {
        if self.grants.allows(grant) {
            Ok(())
        } else {
            Err(ApiError::permission_required(grant))
        }
    }

    /// 404 `tenant_not_found` unless the path's tenant is the caller's:
    /// another tenant's resources do not exist for this caller.
    pub fn check_tenant(&self, tenant_id: &str) -> Result<(), ApiError> {
        if self.tenant_id == tenant_id {
            Ok(())
        } else {
            Err(ApiError::tenant_not_found())
        }
    }
}

/// The bearer credential of an `Authorization` header value.
pub fn bearer(header: Option<&str>) -> Result<&str, ApiError> {
    let Some(value) = header else {
        return Err(ApiError::unauthenticated(
            "send a customer access token or workspace API key as `Authorization: Bearer <credential>`",
        ));
    };
    let mut parts = value.trim().splitn(2, ' ');
    let scheme = parts.next().unwrap_or("");
    let credential = parts.next().map(str::trim).unwrap_or("");
    if !scheme.eq_ignore_ascii_case("bearer") || credential.is_empty() {
        return Err(ApiError::unauthenticated(
            "the Authorization header must be `Bearer <credential>`",
        ));
    }
    Ok(credential)
}

/// Resolves a bearer credential to its caller.
pub async fn authenticate(store: &Store, credential: &str) -> Result<Caller, ApiError> {
    let invalid = || ApiError::unauthenticated("unknown, expired or revoked credential");
    let found = store
        .credential_by_hash(&hash_credential(credential))
        .await?
        .ok_or_else(invalid)?;
    let (cred, user) = found;
    if !cred.is_usable(crate::store::now_ms()) || cred.tenant_id != user.tenant_id {
        return Err(invalid());
    }
    let via = match cred.kind.as_str() {
        "token" => CredentialKind::Token,
        "key" => CredentialKind::Key,
        _ => return Err(invalid()),
    };
    let key = match via {
        CredentialKind::Token => None,
        CredentialKind::Key => Some(GrantSet::from_stored(&cred.grants)),
    };
    Ok(Caller {
        credential_id: cred.id,
        tenant_id: cred.tenant_id,
        user_id: user.id,
        via,
        grants: Effective {
            user: GrantSet::from_stored(&user.permissions),
            key,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_needs_the_scheme_and_a_credential() {
        assert_eq!(bearer(Some("Bearer abc")).unwrap(), "abc");
        assert_eq!(bearer(Some("bearer  abc ")).unwrap(), "abc");
        for bad in [None, Some("abc"), Some("Basic abc"), Some("Bearer ")] {
            assert_eq!(bearer(bad).unwrap_err().status.as_u16(), 401);
        }
    }
}
