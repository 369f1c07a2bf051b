//! `request <hex>`: check a client->server frame the way the server does,
//! decode its body with the crate's request type and re-encode it.

use std::fmt::Debug;

use bytes::BytesMut;
use iggy_binary_protocol::batch::decode_batch_slice;
use iggy_binary_protocol::codes::{
    LOGIN_REGISTER_CODE, LOGIN_REGISTER_WITH_PAT_CODE, LOGOUT_USER_CODE, SEND_MESSAGES_CODE,
};
use iggy_binary_protocol::consensus::{operation_for_code, NON_REPLICATED_CODE_RANGE};
use iggy_binary_protocol::requests::consumer_groups::{
    CreateConsumerGroupRequest, DeleteConsumerGroupRequest, GetConsumerGroupRequest,
    GetConsumerGroupsRequest, JoinConsumerGroupRequest, LeaveConsumerGroupRequest,
    SyncConsumerGroupRequest,
};
use iggy_binary_protocol::requests::consumer_offsets::{
    DeleteConsumerOffsetRequest, GetConsumerOffsetRequest, StoreConsumerOffsetRequest,
};
use iggy_binary_protocol::requests::messages::{
    DeferredPollMessagesRequest, GetPartitionRouteRequest, PollMessagesRequest, RawMessage,
    SendMessagesEncoder, SendMessagesHeader, WaitForMessagesRequest,
};
use iggy_binary_protocol::requests::partitions::{
    CreatePartitionsRequest, DeletePartitionsRequest,
};
use iggy_binary_protocol::requests::personal_access_tokens::{
    CreatePersonalAccessTokenRequest, DeletePersonalAccessTokenRequest,
    GetPersonalAccessTokensRequest, LoginWithPersonalAccessTokenRequest,
};
use iggy_binary_protocol::requests::segments::DeleteSegmentsRequest;
use iggy_binary_protocol::requests::streams::{
    CreateStreamRequest, DeleteStreamRequest, GetStreamRequest, GetStreamsRequest,
};
use iggy_binary_protocol::requests::system::{
    BindSessionRequest, DescribeOptionsRequest, GetClientRequest, GetClientsRequest,
    GetClusterMetadataRequest, GetMeRequest, GetMetadataChangesRequest, GetSnapshotRequest,
    GetStatsRequest, PingRequest, UpdateResourceRequest,
};
use iggy_binary_protocol::requests::topics::{
    CreateTopicRequest, DeleteTopicRequest, GetTopicRequest, GetTopicsRequest,
};
use iggy_binary_protocol::requests::users::{
    ChangePasswordRequest, CreateUserRequest, DeleteUserRequest, GetUserRequest, GetUsersRequest,
    LoginRegisterRequest, LoginRegisterWithPatRequest, LoginUserRequest, LogoutUserRequest,
    UpdatePermissionsRequest,
};
use iggy_binary_protocol::{
    is_protocol_compatible, lookup_command, ClientVersionInfo, ConsensusHeader, Operation,
    ProtocolVersion, RequestHeader, WireDecode, WireEncode, HEADER_SIZE,
};

/// A checked request: its command code, the re-encoded body and a one-line
/// debug rendering of the decoded value.
pub struct Checked {
    pub code: u32,
    pub body: Vec<u8>,
    pub debug: String,
}

/// Check `frame` (256-byte header + body) as the server does.
pub fn check(frame: &[u8]) -> Result<Checked, String> {
    if frame.len() < HEADER_SIZE {
        return Err(format!(
            "frame is {} bytes, shorter than the {HEADER_SIZE}-byte header",
            frame.len()
        ));
    }
    let header: RequestHeader = bytemuck::checked::try_pod_read_unaligned(&frame[..HEADER_SIZE])
        .map_err(|e| {
            format!(
                "header does not cast to RequestHeader ({e}; command byte {}, operation byte {})",
                frame[60], frame[176]
            )
        })?;
    header
        .validate()
        .map_err(|e| format!("header validate: {e}"))?;
    if header.size as usize != frame.len() {
        return Err(format!(
            "header size {} != frame length {}",
            header.size,
            frame.len()
        ));
    }
    let body = &frame[HEADER_SIZE..];
    let operation = header.operation;

    // The command code: in `reserved` for NonReplicated, from the body shape
    // for Register (as the server's login gate does), from the operation
    // otherwise.
    let mut register: Option<Checked> = None;
    let code = match operation {
        Operation::NonReplicated => {
            let code = u32::from_le_bytes(
                header.reserved[NON_REPLICATED_CODE_RANGE]
                    .try_into()
                    .expect("4 bytes"),
            );
            if lookup_command(code).is_none() {
                return Err(format!(
                    "non-replicated command code {code} is not in the dispatch table"
                ));
            }
            code
        }
        Operation::Register => {
            let checked = check_register(body)?;
            let code = checked.code;
            register = Some(checked);
            code
        }
        Operation::Logout => LOGOUT_USER_CODE,
        op => op
            .to_command_code()
            .ok_or_else(|| format!("operation {op:?} has no client command code"))?,
    };
    let want = operation_for_code(code);
    if want != operation {
        return Err(format!(
            "operation {operation:?} != operation_for_code({code}) = {want:?}"
        ));
    }

    // The rules RequestHeader::for_request applies to every client's header,
    // so that all SDKs agree on the bytes.
    if operation != Operation::NonReplicated && header.reserved != [0; 4] {
        return Err(format!(
            "reserved {:?} must be zero for operation {operation:?} (only NonReplicated carries a code there)",
            header.reserved
        ));
    }
    let stampless = operation.is_partition() || operation == Operation::NonReplicated;
    if stampless && header.request_checksum != 0 {
        return Err(format!(
            "request_checksum must be zero for operation {operation:?}"
        ));
    }
    if !stampless && header.request_checksum == 0 {
        return Err(format!(
            "request_checksum must be a nonzero random id for operation {operation:?}"
        ));
    }

    if let Some(checked) = register {
        return Ok(checked);
    }
    let (body, debug) = decode_body(code, body)?;
    Ok(Checked { code, body, debug })
}

fn whole<T: WireDecode + WireEncode + Debug>(body: &[u8]) -> Result<(Vec<u8>, String), String> {
    let (value, consumed) = T::decode(body).map_err(|e| format!("decode: {e}"))?;
    if consumed != body.len() {
        return Err(format!(
            "body has {} trailing bytes after the {consumed} the decoder consumed",
            body.len() - consumed
        ));
    }
    let mut buf = BytesMut::with_capacity(value.encoded_size());
    value.encode(&mut buf);
    if buf.len() != value.encoded_size() {
        return Err(format!(
            "re-encoded {} bytes but encoded_size says {}",
            buf.len(),
            value.encoded_size()
        ));
    }
    Ok((buf.to_vec(), format!("{value:?}")))
}

/// The Register body: `ClientVersionInfo`, the protocol gate, then the
/// password shape (LoginRegister, 40) before the token shape
/// (LoginRegisterWithPAT, 45), the order the server's login gate tries them.
fn check_register(body: &[u8]) -> Result<Checked, String> {
    let (info, prefix) = ClientVersionInfo::decode(body)
        .map_err(|e| format!("register body has no decodable ClientVersionInfo prefix (server evicts MalformedLogin): {e}"))?;
    if !is_protocol_compatible(info.protocol_version) {
        return Err(format!(
            "register protocol version {} ({}) is outside the server's range (server evicts IncompatibleProtocol)",
            info.protocol_version,
            ProtocolVersion(info.protocol_version)
        ));
    }
    let tail = &body[prefix..];
    let mut reasons = Vec::new();
    match LoginRegisterRequest::decode_after_prefix(info.clone(), tail) {
        Ok((_, n)) if n == tail.len() => {
            let (body, debug) = whole::<LoginRegisterRequest>(body)?;
            return Ok(Checked {
                code: LOGIN_REGISTER_CODE,
                body,
                debug,
            });
        }
        Ok((_, n)) => reasons.push(format!(
            "password shape leaves {} trailing bytes",
            tail.len() - n
        )),
        Err(e) => reasons.push(format!("password shape: {e}")),
    }
    match LoginRegisterWithPatRequest::decode_after_prefix(info, tail) {
        Ok((_, n)) if n == tail.len() => {
            let (body, debug) = whole::<LoginRegisterWithPatRequest>(body)?;
            Ok(Checked {
                code: LOGIN_REGISTER_WITH_PAT_CODE,
                body,
                debug,
            })
        }
        Ok((_, n)) => {
            reasons.push(format!(
                "token shape leaves {} trailing bytes",
                tail.len() - n
            ));
            Err(reasons.join("; "))
        }
        Err(e) => {
            reasons.push(format!("token shape: {e}"));
            Err(reasons.join("; "))
        }
    }
}

fn decode_body(code: u32, body: &[u8]) -> Result<(Vec<u8>, String), String> {
    match code {
        1 => whole::<PingRequest>(body),
        10 => whole::<GetStatsRequest>(body),
        11 => whole::<GetSnapshotRequest>(body),
        12 => whole::<GetClusterMetadataRequest>(body),
        13 => whole::<DescribeOptionsRequest>(body),
        15 => whole::<BindSessionRequest>(body),
        16 => whole::<UpdateResourceRequest>(body),
        17 => whole::<GetMetadataChangesRequest>(body),
        20 => whole::<GetMeRequest>(body),
        21 => whole::<GetClientRequest>(body),
        22 => whole::<GetClientsRequest>(body),
        31 => whole::<GetUserRequest>(body),
        32 => whole::<GetUsersRequest>(body),
        33 => whole::<CreateUserRequest>(body),
        34 => whole::<DeleteUserRequest>(body),
        36 => whole::<UpdatePermissionsRequest>(body),
        37 => whole::<ChangePasswordRequest>(body),
        38 => whole::<LoginUserRequest>(body),
        39 => whole::<LogoutUserRequest>(body),
        41 => whole::<GetPersonalAccessTokensRequest>(body),
        42 => whole::<CreatePersonalAccessTokenRequest>(body),
        43 => whole::<DeletePersonalAccessTokenRequest>(body),
        44 => whole::<LoginWithPersonalAccessTokenRequest>(body),
        100 => whole::<PollMessagesRequest>(body),
        SEND_MESSAGES_CODE => send_messages(body),
        105 => whole::<GetPartitionRouteRequest>(body),
        106 => whole::<DeferredPollMessagesRequest>(body),
        107 => {
            let (value, consumed) =
                WaitForMessagesRequest::decode(body).map_err(|e| format!("decode: {e}"))?;
            value.validate().map_err(|e| format!("validate: {e}"))?;
            if consumed != body.len() {
                return Err(format!(
                    "body has {} trailing bytes after the {consumed} the decoder consumed",
                    body.len() - consumed
                ));
            }
            Ok((value.to_bytes().to_vec(), format!("{value:?}")))
        }
        108 => {
            // CancelDeferredRequest: no request type; the body is empty and
            // the header's `request` names the deferred request.
            if body.is_empty() {
                Ok((Vec::new(), "CancelDeferredRequest".to_string()))
            } else {
                Err(format!(
                    "cancel-deferred body must be empty, has {} bytes",
                    body.len()
                ))
            }
        }
        120 => whole::<GetConsumerOffsetRequest>(body),
        121 => whole::<StoreConsumerOffsetRequest>(body),
        122 => whole::<DeleteConsumerOffsetRequest>(body),
        200 => whole::<GetStreamRequest>(body),
        201 => whole::<GetStreamsRequest>(body),
        202 => whole::<CreateStreamRequest>(body),
        203 => whole::<DeleteStreamRequest>(body),
        300 => whole::<GetTopicRequest>(body),
        301 => whole::<GetTopicsRequest>(body),
        302 => whole::<CreateTopicRequest>(body),
        303 => whole::<DeleteTopicRequest>(body),
        402 => whole::<CreatePartitionsRequest>(body),
        403 => whole::<DeletePartitionsRequest>(body),
        503 => whole::<DeleteSegmentsRequest>(body),
        600 => whole::<GetConsumerGroupRequest>(body),
        601 => whole::<GetConsumerGroupsRequest>(body),
        602 => whole::<CreateConsumerGroupRequest>(body),
        603 => whole::<DeleteConsumerGroupRequest>(body),
        604 => whole::<JoinConsumerGroupRequest>(body),
        605 => whole::<LeaveConsumerGroupRequest>(body),
        606 => whole::<SyncConsumerGroupRequest>(body),
        _ => Err(format!("no request decoder for command code {code}")),
    }
}

/// SendMessages: `[metadata_length:u32][SendMessagesHeader][batch]`. The
/// batch is verified (frame and batch checksums, exact tiling) and the body
/// is re-encoded with the crate's `SendMessagesEncoder` from the decoded
/// messages, so any non-canonical byte shows up as a difference.
fn send_messages(body: &[u8]) -> Result<(Vec<u8>, String), String> {
    let metadata_length = iggy_binary_protocol::codec::read_u32_le(body, 0)
        .map_err(|e| format!("decode metadata_length: {e}"))? as usize;
    let (meta, consumed) =
        SendMessagesHeader::decode(&body[4..]).map_err(|e| format!("decode metadata: {e}"))?;
    if consumed != metadata_length || meta.metadata_length() != metadata_length {
        return Err(format!(
            "metadata_length {metadata_length} but the metadata section is {consumed} bytes"
        ));
    }
    let batch_bytes = &body[4 + consumed..];
    let batch = decode_batch_slice(batch_bytes).map_err(|e| format!("batch: {e}"))?;
    if batch.header.total_size() != batch_bytes.len() {
        return Err(format!(
            "batch_length {} but {} bytes follow the metadata",
            batch.header.batch_length,
            batch_bytes.len()
        ));
    }
    if batch.header.message_count != meta.messages_count {
        return Err(format!(
            "metadata messages_count {} != batch message_count {}",
            meta.messages_count, batch.header.message_count
        ));
    }
    if meta.messages_count == 0 {
        return Err("empty message batch".to_string());
    }
    let h = &batch.header;
    if h.partition_id != 0 || h.base_offset != 0 || h.base_timestamp != 0 {
        return Err(format!(
            "producer batch must leave partition_id, base_offset and base_timestamp zero (got {}, {}, {})",
            h.partition_id, h.base_offset, h.base_timestamp
        ));
    }
    let views: Vec<_> = batch.iter().collect();
    let mut raw = Vec::with_capacity(views.len());
    let mut summary = Vec::with_capacity(views.len());
    for (index, view) in views.iter().enumerate() {
        if !view.user_headers.is_empty() {
            iggy_binary_protocol::validate_user_headers(view.user_headers)
                .map_err(|e| format!("message {index} user headers: {e}"))?;
        }
        raw.push(RawMessage {
            id: view.header.id,
            origin_timestamp: h.origin_timestamp + u64::from(view.header.timestamp_delta),
            headers: (!view.user_headers.is_empty()).then_some(view.user_headers),
            payload: view.payload,
        });
        summary.push(format!(
            "{{id: {}, offset_delta: {}, timestamp_delta: {}, payload: {}B, headers: {}B}}",
            view.header.id,
            view.header.offset_delta,
            view.header.timestamp_delta,
            view.payload.len(),
            view.user_headers.len()
        ));
    }
    let mut buf = BytesMut::new();
    SendMessagesEncoder::encode(
        &mut buf,
        &meta.stream_id,
        &meta.topic_id,
        &meta.partitioning,
        &raw,
    )
    .map_err(|e| format!("re-encode: {e}"))?;
    let debug = format!(
        "SendMessages {{ {meta:?}, origin_timestamp: {}, batch_length: {}, messages: [{}] }}",
        h.origin_timestamp,
        h.batch_length,
        summary.join(", ")
    );
    Ok((buf.to_vec(), debug))
}

#[cfg(test)]
mod tests {
    use super::*;
    use iggy_binary_protocol::requests::users::login_register::BindSecret;
    use iggy_binary_protocol::{
        WireIdentifier, WireName, WireOptions, WirePartitioning, IGGY_PROTOCOL_VERSION,
    };
    use secrecy::SecretString;

    /// A frame the way the official SDK builds it: `RequestHeader::for_request`.
    fn frame(code: u32, session: u64, request: u64, body: &[u8]) -> Vec<u8> {
        let header = RequestHeader::for_request(code, 7, request, session, body).unwrap();
        let mut frame = bytemuck::bytes_of(&header).to_vec();
        frame.extend_from_slice(body);
        frame
    }

    fn version_info() -> ClientVersionInfo {
        ClientVersionInfo {
            protocol_version: IGGY_PROTOCOL_VERSION,
            sdk_name: WireName::new("kiggy").unwrap(),
            sdk_version: WireName::new("0.0.1").unwrap(),
        }
    }

    #[test]
    fn sdk_frames_pass_and_reencode_identically() {
        let get_stream = GetStreamRequest {
            stream_id: WireIdentifier::numeric(3),
        }
        .to_bytes();
        let create_stream = CreateStreamRequest {
            name: WireName::new("s").unwrap(),
            options: WireOptions::empty(),
        }
        .to_bytes();
        let login = LoginRegisterRequest {
            version_info: version_info(),
            bind_secret: BindSecret::new(Box::new([9; 32])),
            username: WireName::new("iggy").unwrap(),
            password: SecretString::from("secret"),
            client_context: None,
        }
        .to_bytes();
        let pat = LoginRegisterWithPatRequest {
            version_info: version_info(),
            bind_secret: BindSecret::new(Box::new([9; 32])),
            token: SecretString::from("token-token"),
            client_context: Some("ctx".to_string()),
        }
        .to_bytes();
        let mut send = BytesMut::new();
        SendMessagesEncoder::encode(
            &mut send,
            &WireIdentifier::numeric(1),
            &WireIdentifier::named("t").unwrap(),
            &WirePartitioning::PartitionId(0),
            &[
                RawMessage {
                    id: 1,
                    origin_timestamp: 10,
                    headers: None,
                    payload: b"a",
                },
                RawMessage {
                    id: 2,
                    origin_timestamp: 12,
                    headers: None,
                    payload: b"",
                },
            ],
        )
        .unwrap();
        let cases: Vec<(u32, u64, u64, Vec<u8>)> = vec![
            (1, 0, 0, Vec::new()),
            (200, 0, 0, get_stream.to_vec()),
            (202, 5, 6, create_stream.to_vec()),
            (LOGIN_REGISTER_CODE, 0, 0, login.to_vec()),
            (LOGIN_REGISTER_WITH_PAT_CODE, 0, 0, pat.to_vec()),
            (SEND_MESSAGES_CODE, 5, 6, send.to_vec()),
            (LOGOUT_USER_CODE, 5, 6, Vec::new()),
            (108, 5, 6, Vec::new()),
        ];
        for (code, session, request, body) in cases {
            let checked = check(&frame(code, session, request, &body))
                .unwrap_or_else(|e| panic!("code {code}: {e}"));
            assert_eq!(checked.code, code);
            assert_eq!(checked.body, body, "code {code}");
        }
    }

    #[test]
    fn broken_frames_are_refused() {
        let ping = frame(1, 0, 0, &[]);
        let mut long = ping.clone();
        long.push(0);
        assert!(check(&long).is_err());
        let mut bad_op = ping.clone();
        bad_op[176] = 99;
        assert!(check(&bad_op).is_err());
        let mut bad_code = ping;
        bad_code[196] = 2;
        assert!(check(&bad_code).is_err());
    }
}
