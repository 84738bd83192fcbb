//! Keeping credentials out of everything reapcheck prints or writes.

/// `url` with its password replaced by `***`; text that is not a URL is
/// returned with everything between `:` and `@` hidden, to be safe.
pub fn url(text: &str) -> String {
    match url::Url::parse(text) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => match (text.find("://"), text.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => {
                let userinfo = &text[scheme + 3..at];
                match userinfo.split_once(':') {
                    Some((user, _)) => format!("{}{user}:***{}", &text[..scheme + 3], &text[at..]),
                    None => text.to_owned(),
                }
            }
            _ => text.to_owned(),
        },
    }
}

/// `message` with the password of `url` (raw or percent-decoded) removed.
pub fn message(message: &str, url: &str) -> String {
    let Ok(parsed) = url::Url::parse(url) else { return message.to_owned() };
    let Some(password) = parsed.password().filter(|p| !p.is_empty()) else { return message.to_owned() };
    let decoded = percent_decode(password);
    message.replace(url, &self::url(url)).replace(password, "***").replace(&decoded, "***")
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_survive() {
        assert_eq!(url("postgres://app:s3cret@db:5432/test"), "postgres://app:***@db:5432/test");
        assert_eq!(url("postgres://app@db/test"), "postgres://app@db/test");
        let u = "mysql://root:p%40ss@h/test";
        let m = message("cannot log in to mysql://root:p%40ss@h/test as root with p@ss", u);
        assert!(!m.contains("p%40ss") && !m.contains("p@ss"), "{m}");
    }
}
