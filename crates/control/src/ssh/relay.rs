//! The SSH server of the control plane (`OH_CONTROL_SSH_ADDR`): a client
//! authenticates with a ticket — as its password, its keyboard-interactive
//! answer, or its user name (for clients that cannot prompt; the `none`
//! method) — and then gets shells, commands and SFTP inside the ticket's
//! sandbox (see [`super::shell`]). Nothing else is an SSH credential: no
//! bearer token, no public key. An open session's access is checked again
//! every `OH_CONTROL_SSH_RECHECK_SECONDS`: revoking the credential that
//! minted its ticket, taking `sandboxes:write` from its user or deleting
//! its sandbox disconnects it. Sessions are logged (who, which sandbox,
//! when, the exit status, why the relay ended one), never their content.

use super::container::{self, Container};
use super::error::{RelayError, RelayStartError};
use super::shell::{self, Input, Place, Program, Terminal};
use super::tickets::{Opened, Refused, may_continue, use_ticket};
use crate::engines::{DOCKER, LOCAL, SWARM};
use crate::service::{ControlPlane, Inner};
use russh::keys::PrivateKey;
use russh::server::{Auth, ChannelOpenHandle, Handler, Msg, Session};
use russh::{Channel, ChannelId, Disconnect, MethodKind, MethodSet};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long a connection may stay silent.
const INACTIVITY: Duration = Duration::from_secs(3600);

/// Serves the relay on `listener` until the control plane shuts down.
async fn serve(inner: Arc<Inner>, listener: TcpListener, key: PrivateKey) {
    let config = Arc::new(russh::server::Config {
        keys: vec![key],
        methods: MethodSet::from(&[MethodKind::Password, MethodKind::KeyboardInteractive][..]),
        auth_rejection_time: Duration::from_millis(500),
        auth_rejection_time_initial: Some(Duration::ZERO),
        max_auth_attempts: 6,
        inactivity_timeout: Some(INACTIVITY),
        keepalive_interval: Some(Duration::from_secs(30)),
        ..Default::default()
    });
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = inner.shutdown.cancelled() => return,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!("SSH relay: accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let conn = Conn {
            inner: inner.clone(),
            peer,
            opened: None,
            channels: HashMap::new(),
            watch: None,
        };
        let config = config.clone();
        let stop = inner.shutdown.clone();
        tokio::spawn(async move {
            match russh::server::run_stream(config, stream, conn).await {
                Ok(session) => {
                    tokio::select! {
                        r = session => if let Err(e) = r {
                            tracing::debug!(%peer, "SSH relay session ended: {e}");
                        },
                        () = stop.cancelled() => {}
                    }
                }
                Err(e) => tracing::debug!(%peer, "SSH relay handshake failed: {e}"),
            }
        });
    }
}

/// Where a channel's program runs.
enum Target {
    /// A local sandbox.
    Local(Place),
    /// A docker or swarm sandbox's container.
    Container(Container),
}

/// One client connection.
struct Conn {
    inner: Arc<Inner>,
    peer: SocketAddr,
    opened: Option<Opened>,
    channels: HashMap<ChannelId, Chan>,
    /// Stops the access re-check when the connection ends.
    watch: Option<CancellationToken>,
}

/// One session channel.
#[derive(Default)]
struct Chan {
    term: Option<Terminal>,
    input: Option<mpsc::UnboundedSender<Input>>,
}

impl Conn {
    /// Tries `secret` as a ticket for a client that logs in as `user` (the
    /// sandbox's id, or the ticket itself).
    async fn try_ticket(&mut self, user: &str, secret: &str) -> Auth {
        if self.opened.is_some() {
            return Auth::Accept;
        }
        match use_ticket(&self.inner.store, secret.trim()).await {
            Ok(o) if user == secret || user == o.sandbox.id => {
                tracing::info!(
                    peer = %self.peer,
                    sandbox = %o.sandbox.id,
                    user = %o.ticket.user_id,
                    "SSH session opened"
                );
                self.opened = Some(o);
                Auth::Accept
            }
            Ok(o) => {
                tracing::info!(
                    peer = %self.peer,
                    sandbox = %o.sandbox.id,
                    "SSH ticket refused: it is for another sandbox than the login name"
                );
                Auth::reject()
            }
            Err(Refused::Store(e)) => {
                tracing::warn!(peer = %self.peer, "SSH ticket check failed: {e}");
                Auth::reject()
            }
            Err(why) => {
                tracing::info!(peer = %self.peer, "SSH ticket refused: {why}");
                Auth::reject()
            }
        }
    }

    /// Where a program of this connection's sandbox runs, or why it
    /// cannot.
    async fn place(&self) -> Result<Target, RelayError> {
        let Some(o) = &self.opened else {
            return Err(RelayError::NotAuthenticated);
        };
        let s = &o.sandbox;
        let engines = &self.inner.engines;
        let engine = s.engine.as_deref().unwrap_or(&s.placement);
        match engine {
            LOCAL => {
                if s.owner_instance != self.inner.instance {
                    return Err(RelayError::OtherInstance);
                }
                let local = &engines.local;
                Ok(Target::Local(Place {
                    workspace: std::path::PathBuf::from(&s.working_dir),
                    confinement: local.procs().confinement().clone(),
                    layout: local.layout(&s.id),
                }))
            }
            DOCKER => Ok(Target::Container(engines.docker.container_of(s).await?)),
            SWARM => Ok(Target::Container(engines.swarm.container_of(s).await?)),
            other => Err(RelayError::Unsupported(other.to_string())),
        }
    }

    async fn run(
        &mut self,
        channel: ChannelId,
        program: Program,
        session: &mut Session,
    ) -> Result<(), russh::Error> {
        let term = self.channels.get(&channel).and_then(|c| c.term.clone());
        let handle = session.handle();
        let started = match self.place().await {
            Ok(Target::Local(place)) => {
                shell::start(place, program.clone(), term, handle, channel).await
            }
            Ok(Target::Container(c)) => {
                container::start(c, program.clone(), term, handle, channel).await
            }
            Err(e) => Err(e),
        };
        let (sandbox, user) = self
            .opened
            .as_ref()
            .map(|o| (o.sandbox.id.clone(), o.ticket.user_id.clone()))
            .unwrap_or_default();
        let what = match &program {
            Program::Shell => "shell",
            Program::Command(_) => "command",
            Program::Sftp => "sftp",
        };
        match started {
            Ok((tx, done)) => {
                session.channel_success(channel)?;
                if let Some(c) = self.channels.get_mut(&channel) {
                    c.input = Some(tx);
                }
                let peer = self.peer;
                tokio::spawn(async move {
                    let status = done.await.ok();
                    tracing::info!(
                        %peer, %sandbox, %user, what, exit = ?status,
                        "SSH channel ended"
                    );
                });
            }
            Err(e) => {
                tracing::warn!(peer = %self.peer, %sandbox, %user, what, "SSH channel refused: {e}");
                session.extended_data(channel, 1, format!("openhands relay: {e}\r\n"))?;
                session.channel_failure(channel)?;
                session.exit_status_request(channel, 255)?;
                session.eof(channel)?;
                session.close(channel)?;
            }
        }
        Ok(())
    }

    /// Starts (once) the periodic re-check of this connection's access:
    /// when it is lost the client is disconnected, which ends its
    /// programs.
    fn watch_access(&mut self, session: &Session) {
        let (Some(o), None) = (&self.opened, &self.watch) else {
            return;
        };
        let stop = CancellationToken::new();
        self.watch = Some(stop.clone());
        let (inner, ticket, handle, peer) = (
            self.inner.clone(),
            o.ticket.clone(),
            session.handle(),
            self.peer,
        );
        let every = inner.config.ssh.recheck;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    () = stop.cancelled() => return,
                    () = inner.shutdown.cancelled() => return,
                }
                match may_continue(&inner.store, &ticket).await {
                    Ok(()) => {}
                    Err(Refused::Store(e)) => {
                        tracing::warn!(%peer, sandbox = %ticket.sandbox_id, "SSH access re-check failed: {e}");
                    }
                    Err(why) => {
                        tracing::info!(
                            %peer,
                            sandbox = %ticket.sandbox_id,
                            user = %ticket.user_id,
                            "SSH session ended by the relay: {why}"
                        );
                        let _ = handle
                            .disconnect(
                                Disconnect::ByApplication,
                                format!("access to the sandbox ended: {why}"),
                                "en".into(),
                            )
                            .await;
                        return;
                    }
                }
            }
        });
    }

    fn send(&self, channel: ChannelId, input: Input) {
        if let Some(tx) = self.channels.get(&channel).and_then(|c| c.input.as_ref()) {
            let _ = tx.send(input);
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(stop) = &self.watch {
            stop.cancel();
        }
        if let Some(o) = &self.opened {
            tracing::info!(
                peer = %self.peer,
                sandbox = %o.sandbox.id,
                user = %o.ticket.user_id,
                "SSH session closed"
            );
        }
    }
}

fn clamp(v: u32) -> u16 {
    u16::try_from(v).unwrap_or(u16::MAX).max(1)
}

impl Handler for Conn {
    type Error = russh::Error;

    async fn auth_none(&mut self, user: &str) -> Result<Auth, Self::Error> {
        if user.starts_with(super::tickets::TICKET_PREFIX) {
            let user = user.to_string();
            return Ok(self.try_ticket(&user, &user).await);
        }
        Ok(Auth::reject())
    }

    async fn auth_password(&mut self, user: &str, password: &str) -> Result<Auth, Self::Error> {
        Ok(self.try_ticket(user, password).await)
    }

    async fn auth_keyboard_interactive<'a>(
        &'a mut self,
        user: &str,
        _submethods: &str,
        response: Option<russh::server::Response<'a>>,
    ) -> Result<Auth, Self::Error> {
        let answer = response.and_then(|mut r| r.next());
        match answer {
            None => Ok(Auth::Partial {
                name: "OpenHands sandbox".into(),
                instructions: "Paste the ticket from POST …/ssh/tickets.".into(),
                prompts: vec![("Ticket (password): ".into(), false)].into(),
            }),
            Some(a) => {
                let secret = String::from_utf8_lossy(&a).into_owned();
                Ok(self.try_ticket(user, &secret).await)
            }
        }
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: ChannelOpenHandle,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.watch_access(session);
        self.channels.insert(channel.id(), Chan::default());
        reply.accept().await;
        Ok(())
    }

    async fn pty_request(
        &mut self,
        channel: ChannelId,
        term: &str,
        col_width: u32,
        row_height: u32,
        _pix_width: u32,
        _pix_height: u32,
        _modes: &[(russh::Pty, u32)],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        if let Some(c) = self.channels.get_mut(&channel) {
            c.term = Some(Terminal {
                term: term.chars().take(64).collect(),
                cols: clamp(col_width),
                rows: clamp(row_height),
            });
        }
        session.channel_success(channel)?;
        Ok(())
    }

    async fn shell_request(
        &mut self,
        channel: ChannelId,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.run(channel, Program::Shell, session).await
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        let command = String::from_utf8_lossy(data).into_owned();
        self.run(channel, Program::Command(command), session).await
    }

    async fn subsystem_request(
        &mut self,
        channel: ChannelId,
        name: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        if name == "sftp" {
            self.run(channel, Program::Sftp, session).await
        } else {
            session.channel_failure(channel)?;
            Ok(())
        }
    }

    async fn window_change_request(
        &mut self,
        channel: ChannelId,
        col_width: u32,
        row_height: u32,
        _pix_width: u32,
        _pix_height: u32,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.send(channel, Input::Resize(clamp(col_width), clamp(row_height)));
        Ok(())
    }

    async fn data(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.send(channel, Input::Data(bytes::Bytes::copy_from_slice(data)));
        Ok(())
    }

    async fn channel_eof(
        &mut self,
        channel: ChannelId,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.send(channel, Input::Eof);
        Ok(())
    }

    async fn channel_close(
        &mut self,
        channel: ChannelId,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        // Dropping the input ends the program (its whole group).
        self.channels.remove(&channel);
        Ok(())
    }
}

/// Starts the relay when `OH_CONTROL_SSH_ADDR` is set: binds, records the
/// address put in tickets, and serves in the background.
/// It stops when the control plane shuts down.
pub async fn start(cp: &ControlPlane) -> Result<(), RelayStartError> {
    let inner = &cp.inner;
    let Some(addr) = inner.config.ssh.listen else {
        return Ok(());
    };
    let key = super::hostkey::load_or_create(&inner.store, &inner.sealer).await?;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| RelayStartError::Bind { addr, source })?;
    let local = listener.local_addr().map_err(RelayStartError::LocalAddr)?;
    let public = match &inner.config.ssh.public {
        Some(p) => p.clone(),
        None => (local.ip().to_string(), local.port()),
    };
    let _ = inner.ssh_public.set(public);
    tracing::info!(%local, "SSH relay listening");
    tokio::spawn(serve(inner.clone(), listener, key));
    Ok(())
}
