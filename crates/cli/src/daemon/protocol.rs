//! The socket protocol between the `zpool`/`zfs` client and the daemon.
//!
//! ```text
//! request:  argc u32 | (len u32, utf-8 bytes){argc} | flags u32
//!           argv[0] = "zpool" | "zfs" | "zinject" | "arcstats" | "tunable" | "__stop"; flags: bit 0 the client's stdin is a
//!           terminal, bit 1 its stdout is, bit 2 its environment has POSIXLY_CORRECT
//! response: frames: kind u8 | len u32 | bytes[len]
//!           kind 1 = stdout bytes, 2 = stderr bytes, 3 = exit code (len 4, i32 LE), last
//!           kind 4 = stdin wanted (len 4: u32 most bytes, at most STDIN_CHUNK_MAX)
//! stdin:    kind 5 = stdin bytes, client to daemon, one per kind-4 frame (len 0 = end)
//! stdio:    `zfs send` / `zfs receive` only (`passes_stdio`), right after the request:
//!           one byte carrying the client's descriptors 0 and 1 (SCM_RIGHTS); the daemon
//!           then reads the stream from and writes it to them itself, no frames
//! ```
//! All integers little-endian. Limits (`ARGS_MAX`, `ARG_LEN_MAX`, `FRAME_LEN_MAX`) bound
//! what either side allocates for the other. Standard input flows only when the command
//! asks for it, a bounded chunk at a time (`zfs receive`): the daemon holds at most one
//! chunk, and a slow pipe on either side simply makes the other wait.

use std::io::{Read, Write};

/// As many arguments as execve(2) can pass (its 2 MiB default holds ~1M one-byte words);
/// what a request may carry in all is bounded by `REQUEST_LEN_MAX`.
pub const ARGS_MAX: u32 = 1 << 20;
pub const ARG_LEN_MAX: u32 = 1 << 20;
/// Total argument bytes of one request (Linux allows at most a quarter of the stack
/// limit, 2 MiB by default).
pub const REQUEST_LEN_MAX: u64 = 16 << 20;
pub const FRAME_LEN_MAX: u32 = 64 << 20;
pub const FRAME_STDOUT: u8 = 1;
pub const FRAME_STDERR: u8 = 2;
pub const FRAME_EXIT: u8 = 3;
pub const FRAME_STDIN_WANT: u8 = 4;
pub const FRAME_STDIN: u8 = 5;
/// Largest stdin chunk one kind-4 frame may ask for.
pub const STDIN_CHUNK_MAX: u32 = 1 << 20;
pub const REQUEST_FLAG_STDIN_TERMINAL: u32 = 1;
pub const REQUEST_FLAG_STDOUT_TERMINAL: u32 = 2;
/// The client's environment has `POSIXLY_CORRECT`: glibc's getopt then stops at the first
/// operand (ZTS's `_neg` tests set it to check that `zfs get all -r` is refused).
pub const REQUEST_FLAG_POSIXLY_CORRECT: u32 = 4;

fn invalid(why: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string())
}

fn read_u32(stream: &mut dyn Read) -> std::io::Result<u32> {
    let mut word = [0u8; 4];
    stream.read_exact(&mut word)?;
    Ok(u32::from_le_bytes(word))
}

/// Whether `args` fit in one request (what `read_request` accepts).
pub fn request_fits(args: &[String]) -> bool {
    args.len() <= ARGS_MAX as usize
        && args.iter().all(|arg| arg.len() <= ARG_LEN_MAX as usize)
        && args.iter().map(|arg| arg.len() as u64).sum::<u64>() <= REQUEST_LEN_MAX
}

pub fn write_request(stream: &mut dyn Write, args: &[String], flags: u32) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&(args.len() as u32).to_le_bytes());
    for arg in args {
        bytes.extend_from_slice(&(arg.len() as u32).to_le_bytes());
        bytes.extend_from_slice(arg.as_bytes());
    }
    bytes.extend_from_slice(&flags.to_le_bytes());
    stream.write_all(&bytes)?;
    stream.flush()
}

/// A request: its argv and flags.
pub fn read_request(stream: &mut dyn Read) -> std::io::Result<(Vec<String>, u32)> {
    let argc = read_u32(stream)?;
    if argc == 0 || argc > ARGS_MAX {
        return Err(invalid("bad argument count"));
    }
    let mut args = Vec::with_capacity((argc as usize).min(1024));
    let mut total_len = 0u64;
    for _ in 0..argc {
        let len = read_u32(stream)?;
        total_len += u64::from(len);
        if len > ARG_LEN_MAX || total_len > REQUEST_LEN_MAX {
            return Err(invalid("argument too long"));
        }
        let mut bytes = vec![0u8; len as usize];
        stream.read_exact(&mut bytes)?;
        args.push(String::from_utf8(bytes).map_err(|_| invalid("argument is not UTF-8"))?);
    }
    let flags = read_u32(stream)?;
    Ok((args, flags))
}

pub fn write_frame(stream: &mut dyn Write, kind: u8, payload: &[u8]) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(5 + payload.len());
    bytes.push(kind);
    bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    bytes.extend_from_slice(payload);
    stream.write_all(&bytes)
}

pub fn read_frame(stream: &mut dyn Read) -> std::io::Result<(u8, Vec<u8>)> {
    let mut kind = [0u8; 1];
    stream.read_exact(&mut kind)?;
    let len = read_u32(stream)?;
    if len > FRAME_LEN_MAX {
        return Err(invalid("frame too long"));
    }
    let mut payload = vec![0u8; len as usize];
    stream.read_exact(&mut payload)?;
    Ok((kind[0], payload))
}

/// A writer that ships everything written to it as frames of one kind, or straight to
/// the client's own descriptor when it passed one (`passes_stdio`).
pub struct FrameWriter<'a> {
    pub stream: &'a std::os::unix::net::UnixStream,
    pub kind: u8,
    pub direct: Option<std::fs::File>,
}

impl Write for FrameWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(file) = self.direct.as_mut() {
            check_client(self.stream)?;
            file.write_all(buf)?;
            return Ok(buf.len());
        }
        let mut stream = self.stream;
        write_frame(&mut stream, self.kind, buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The client's standard input as it passed it (`passes_stdio`), read directly.
pub struct ClientInput<'a> {
    pub stream: &'a std::os::unix::net::UnixStream,
    pub file: std::fs::File,
}

impl Read for ClientInput<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        check_client(self.stream)?;
        self.file.read(buf)
    }
}

/// A killed client ends its command, as killing `zfs send` or `zfs receive` does on
/// OpenZFS: the daemon holds the client's pipe itself (`passes_stdio`), so it looks for
/// the client's end of the socket going away before each read or write of the stream.
fn check_client(stream: &std::os::unix::net::UnixStream) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    if client_gone(stream.as_raw_fd()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            "the command's client went away",
        ));
    }
    Ok(())
}

/// Whether the client's end of the socket `fd` has gone away (hang-up or error).
pub fn client_gone(fd: std::os::fd::RawFd) -> bool {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one pollfd, no timeout.
    let ready = unsafe { libc::poll(&mut poll, 1, 0) };
    ready > 0 && poll.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

/// The client's standard input, read through the socket: each `read` asks the client for
/// at most one chunk (`FRAME_STDIN_WANT`) and waits for its answer (`FRAME_STDIN`).
pub struct RemoteStdin<'a> {
    pub stream: &'a std::os::unix::net::UnixStream,
}

impl Read for RemoteStdin<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = buf.len().min(STDIN_CHUNK_MAX as usize) as u32;
        if want == 0 {
            return Ok(0);
        }
        let mut stream = self.stream;
        write_frame(&mut stream, FRAME_STDIN_WANT, &want.to_le_bytes())?;
        let (kind, payload) = read_frame(&mut stream)?;
        if kind != FRAME_STDIN || payload.len() > want as usize {
            return Err(invalid("the client sent a malformed stdin frame"));
        }
        buf[..payload.len()].copy_from_slice(&payload);
        Ok(payload.len())
    }
}

/// Whether the client hands its standard input and output to the daemon with the request
/// (`zfs send`, `zfs receive`): the stream then flows between the daemon and the pipe or
/// file directly instead of being copied through the client and the socket twice.
pub fn passes_stdio(args: &[String]) -> bool {
    args.first().is_some_and(|a| a == "zfs")
        && args
            .get(1)
            .is_some_and(|a| matches!(a.as_str(), "send" | "receive" | "recv"))
}

/// Client side: sends descriptors 0 and 1 (one byte carrying them as SCM_RIGHTS).
pub fn send_stdio(stream: &std::os::unix::net::UnixStream) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fds: [libc::c_int; 2] = [0, 1];
    let mut byte = [0u8; 1];
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of_val(&fds) as u32) } as usize;
    let mut control = vec![0u8; space];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: the message names live buffers of the stated sizes; CMSG_* compute offsets
    // inside `control`, which is CMSG_SPACE bytes for two descriptors.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(&fds) as u32) as _;
        std::ptr::copy_nonoverlapping(
            fds.as_ptr().cast::<u8>(),
            libc::CMSG_DATA(cmsg),
            std::mem::size_of_val(&fds),
        );
        if libc::sendmsg(stream.as_raw_fd(), &msg, 0) != 1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Daemon side: the client's standard input and output (`send_stdio`).
pub fn recv_stdio(
    stream: &std::os::unix::net::UnixStream,
) -> std::io::Result<(std::fs::File, std::fs::File)> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let mut byte = [0u8; 1];
    let want = std::mem::size_of::<[libc::c_int; 2]>();
    let space = unsafe { libc::CMSG_SPACE(want as u32) } as usize;
    let mut control = vec![0u8; space];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: as in `send_stdio`; every descriptor received is owned by a File at once
    // (MSG_CMSG_CLOEXEC: none leaks into children), and the control data is checked
    // before it is read.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let got = libc::recvmsg(stream.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if got < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut fds = Vec::new();
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let bytes = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(cmsg);
                for i in 0..bytes / std::mem::size_of::<libc::c_int>() {
                    let mut fd: libc::c_int = 0;
                    std::ptr::copy_nonoverlapping(
                        data.add(i * std::mem::size_of::<libc::c_int>()),
                        (&mut fd as *mut libc::c_int).cast::<u8>(),
                        std::mem::size_of::<libc::c_int>(),
                    );
                    fds.push(std::fs::File::from_raw_fd(fd));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        if got != 1 || fds.len() != 2 || msg.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(invalid("the client did not pass its standard streams"));
        }
        let output = fds
            .pop()
            .ok_or_else(|| invalid("no standard output passed"))?;
        let input = fds
            .pop()
            .ok_or_else(|| invalid("no standard input passed"))?;
        Ok((input, output))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request and frame encodings round trip, and hostile lengths are refused before
    /// anything is allocated.
    #[test]
    fn round_trip_and_limits() {
        let args = vec![
            "zpool".to_string(),
            "status".to_string(),
            "tank".to_string(),
        ];
        let mut bytes = Vec::new();
        write_request(&mut bytes, &args, REQUEST_FLAG_STDOUT_TERMINAL).unwrap();
        assert_eq!(
            read_request(&mut &bytes[..]).unwrap(),
            (args, REQUEST_FLAG_STDOUT_TERMINAL)
        );
        let mut frame = Vec::new();
        write_frame(&mut frame, FRAME_EXIT, &7i32.to_le_bytes()).unwrap();
        assert_eq!(
            read_frame(&mut &frame[..]).unwrap(),
            (FRAME_EXIT, 7i32.to_le_bytes().to_vec())
        );
        let huge = [0xffu8, 0xff, 0xff, 0xff];
        assert!(read_request(&mut &huge[..]).is_err());
        assert!(read_frame(&mut &[1u8, 0xff, 0xff, 0xff, 0xff][..]).is_err());
        assert!(read_request(&mut &bytes[..bytes.len() - 1]).is_err());
    }
}
