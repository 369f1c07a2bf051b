//! `reply`, `reply-header`, `eviction`, `reject`: randomized but valid
//! server->client values built and encoded with the crate's own types.

use std::fmt::Debug;

use bytes::BytesMut;
use iggy_binary_protocol::batch::{calculate_batch_checksum, BatchHeader, BATCH_HEADER_SIZE};
use iggy_binary_protocol::consensus::operation_for_code;
use iggy_binary_protocol::requests::messages::{RawMessage, SendMessagesEncoder};
use iggy_binary_protocol::responses::clients::{
    ClientDetailsResponse, ClientResponse, ConsumerGroupInfoResponse, GetClientsResponse,
};
use iggy_binary_protocol::responses::consumer_groups::{
    ConsumerGroupDetailsResponse, ConsumerGroupMemberResponse, ConsumerGroupResponse,
    GetConsumerGroupsResponse, SyncConsumerGroupResponse,
};
use iggy_binary_protocol::responses::consumer_offsets::ConsumerOffsetResponse;
use iggy_binary_protocol::responses::messages::{
    PartitionRouteResponse, PollMessagesResponse, PollMessagesResponseHeader,
    SendMessagesConfirmationResponse, SendMessagesResponse, WaitForMessagesResponse,
};
use iggy_binary_protocol::responses::personal_access_tokens::{
    GetPersonalAccessTokensResponse, PersonalAccessTokenResponse, RawPersonalAccessTokenResponse,
};
use iggy_binary_protocol::responses::streams::{
    GetStreamResponse, GetStreamsResponse, StreamResponse, TopicHeader,
};
use iggy_binary_protocol::responses::system::get_stats::CacheMetricEntry;
use iggy_binary_protocol::responses::system::{
    ClusterMetadataResponse, ClusterNodeResponse, StatsResponse,
};
use iggy_binary_protocol::responses::topics::{
    GetTopicResponse, GetTopicsResponse, PartitionResponse,
};
use iggy_binary_protocol::responses::users::{
    GetUsersResponse, IdentityResponse, LoginRegisterResponse, UserDetailsResponse, UserResponse,
};
use iggy_binary_protocol::responses::EmptyResponse;
use iggy_binary_protocol::{
    lookup_command, result_code, result_section_len, write_rejection_section, Command,
    ConsensusHeader, EvictionHeader, EvictionReason, Operation, PartitionContext, PrepareHeader,
    ReplyHeader, RoutedRequestHeader, WireDecode, WireEncode, WireIdentifier, WireOptions,
    WirePartitioning, HEADER_SIZE, IGGY_PROTOCOL_VERSION, REJECTION_SECTION_LEN,
};

use crate::json::J;
use crate::rng::Rng;

/// Whether a reply body for `code` starts with the committed-result section
/// (`[count:u32]`, then `count` x `{index:u32, result:u32}`): every
/// `Operation::is_result_framed` operation, and Register when non-empty.
pub fn result_framed(code: u32) -> bool {
    let op = operation_for_code(code);
    op.is_result_framed() || op == Operation::Register
}

/// `reply <code> <seed>`: the reply body as the server sends it (result
/// section included where the operation is result-framed) and the values.
pub fn reply(code: u32, seed: u64) -> Result<(Vec<u8>, J), String> {
    let mut rng = Rng::new(seed);
    let (payload, json) = payload(code, &mut rng)?;
    let mut body = Vec::with_capacity(4 + payload.len());
    if result_framed(code) {
        body.extend_from_slice(&0u32.to_le_bytes());
    }
    body.extend_from_slice(&payload);
    Ok((body, json))
}

/// Encode `value`, then prove the crate decodes exactly those bytes back to it.
fn emit<T: WireEncode + WireDecode + PartialEq + Debug>(value: &T) -> Result<Vec<u8>, String> {
    let mut buf = BytesMut::with_capacity(value.encoded_size());
    value.encode(&mut buf);
    if buf.len() != value.encoded_size() {
        return Err(format!(
            "encoded {} bytes but encoded_size says {}",
            buf.len(),
            value.encoded_size()
        ));
    }
    let (back, consumed) =
        T::decode(&buf).map_err(|e| format!("generated value does not decode: {e}"))?;
    if consumed != buf.len() || back != *value {
        return Err(format!("generated value does not round-trip: {value:?}"));
    }
    Ok(buf.to_vec())
}

/// Encode `value` (proven to round-trip) and render it.
fn out<T: WireEncode + WireDecode + PartialEq + Debug>(
    value: &T,
    render: fn(&T) -> J,
) -> Result<(Vec<u8>, J), String> {
    Ok((emit(value)?, render(value)))
}

fn payload(code: u32, rng: &mut Rng) -> Result<(Vec<u8>, J), String> {
    match code {
        // LoginRegister, LoginRegisterWithPAT, BindSession.
        40 | 45 | 15 => {
            let v = LoginRegisterResponse {
                user_id: rng.u32(),
                session: rng.u64(),
                server_protocol_version: if rng.below(4) == 0 {
                    rng.u32()
                } else {
                    IGGY_PROTOCOL_VERSION
                },
                server_version: rng.name(),
            };
            out(&v, j_login_register)
        }
        // Legacy LoginUser and LoginWithPersonalAccessToken.
        38 | 44 => out(&IdentityResponse { user_id: rng.u32() }, j_identity),
        10 => out(&stats(rng), j_stats),
        12 => {
            let v = ClusterMetadataResponse {
                name: rng.string(0, 40),
                nodes: (0..rng.count())
                    .map(|_| ClusterNodeResponse {
                        replica_id: rng.u8(),
                        name: rng.string(0, 30),
                        ip: if rng.bool() {
                            format!("10.{}.{}.{}", rng.u8(), rng.u8(), rng.u8())
                        } else {
                            rng.string(0, 40)
                        },
                        tcp_port: rng.u16(),
                        quic_port: rng.u16(),
                        http_port: rng.u16(),
                        websocket_port: rng.u16(),
                        role: rng.u8(),
                        status: rng.u8(),
                    })
                    .collect(),
            };
            out(&v, j_cluster_metadata)
        }
        // GetMe, GetClient.
        20 | 21 => out(&client_details(rng), j_client_details),
        22 => {
            let v = GetClientsResponse {
                clients: (0..rng.count())
                    .map(|_| {
                        let groups = rng.u32();
                        client(rng, groups)
                    })
                    .collect(),
            };
            out(&v, j_clients)
        }
        // PollMessages, PollMessagesDeferred.
        100 | 106 => poll(rng),
        101 => {
            let v = SendMessagesResponse {
                confirmations: (0..rng.count())
                    .map(|_| SendMessagesConfirmationResponse {
                        stream_id: rng.u32(),
                        topic_id: rng.u32(),
                        partition_id: rng.u32(),
                        base_offset: rng.u64(),
                    })
                    .collect(),
            };
            out(&v, j_send_messages)
        }
        105 => {
            let v = PartitionRouteResponse {
                incarnation: rng.u64(),
                metadata_op: rng.u64(),
                view: rng.u32(),
                partitions_count: rng.u32(),
                primary_replica: rng.u8(),
            };
            out(&v, j_partition_route)
        }
        107 => {
            let n = rng.count();
            let mut partitions: Vec<u32> = Vec::with_capacity(n);
            while partitions.len() < n {
                let p = rng.u32();
                if !partitions.contains(&p) {
                    partitions.push(p);
                }
            }
            out(&WaitForMessagesResponse { partitions }, j_wait)
        }
        120 => {
            let v = ConsumerOffsetResponse {
                partition_id: rng.u32(),
                current_offset: rng.u64(),
                stored_offset: rng.u64(),
            };
            out(&v, j_consumer_offset)
        }
        200 => {
            let topics: Vec<TopicHeader> =
                (0..rng.count()).map(|_| topic_header(rng, None)).collect();
            let v = GetStreamResponse {
                stream: stream(rng, Some(topics.len() as u32)),
                topics,
            };
            out(&v, j_get_stream)
        }
        201 => {
            let v = GetStreamsResponse {
                streams: (0..rng.count()).map(|_| stream(rng, None)).collect(),
            };
            out(&v, j_streams)
        }
        202 => out(&stream(rng, None), j_stream),
        // GetTopic, CreateTopic.
        300 | 302 => out(&topic(rng), j_topic),
        301 => {
            let v = GetTopicsResponse {
                topics: (0..rng.count()).map(|_| topic_header(rng, None)).collect(),
            };
            out(&v, j_topics)
        }
        600 => {
            let members: Vec<ConsumerGroupMemberResponse> = (0..rng.count())
                .map(|_| {
                    let partitions: Vec<u32> = (0..rng.count()).map(|_| rng.u32()).collect();
                    ConsumerGroupMemberResponse {
                        id: rng.u32(),
                        partitions_count: partitions.len() as u32,
                        partitions,
                    }
                })
                .collect();
            let v = ConsumerGroupDetailsResponse {
                group: group(rng, Some(members.len() as u32)),
                members,
            };
            out(&v, j_group_details)
        }
        601 => {
            let v = GetConsumerGroupsResponse {
                groups: (0..rng.count()).map(|_| group(rng, None)).collect(),
            };
            out(&v, j_groups)
        }
        606 => {
            let v = SyncConsumerGroupResponse {
                generation: rng.u64(),
                partitions: (0..rng.count()).map(|_| rng.u32()).collect(),
            };
            out(&v, j_sync)
        }
        31 => {
            let v = UserDetailsResponse {
                user: user(rng),
                permissions: None,
            };
            out(&v, j_user_details)
        }
        32 => {
            let v = GetUsersResponse {
                users: (0..rng.count()).map(|_| user(rng)).collect(),
            };
            out(&v, j_users)
        }
        41 => {
            let v = GetPersonalAccessTokensResponse {
                tokens: (0..rng.count())
                    .map(|_| PersonalAccessTokenResponse {
                        name: rng.name(),
                        expiry_at: rng.u64(),
                    })
                    .collect(),
            };
            out(&v, j_tokens)
        }
        42 => out(
            &RawPersonalAccessTokenResponse { token: rng.name() },
            j_raw_token,
        ),
        c if is_empty_reply(c) => out(&EmptyResponse, j_empty),
        _ => Err(format!("no reply generator for command code {code}")),
    }
}

/// Empty replies: Ping, Logout, the user and token writes, offset writes,
/// deletes, partitions, segments, consumer-group writes
/// (`CreateConsumerGroupResponse` is `EmptyResponse` in this crate),
/// `CancelDeferredRequest` and `UpdateResource`.
const fn is_empty_reply(code: u32) -> bool {
    matches!(
        code,
        1 | 16
            | 33
            | 34
            | 36
            | 37
            | 39
            | 43
            | 108
            | 121
            | 122
            | 203
            | 303
            | 402
            | 403
            | 503
            | 602
            | 603
            | 604
            | 605
    )
}

/// Decode a payload as `T`, require every byte consumed, re-encode, render.
fn dec<T: WireEncode + WireDecode + Debug>(
    payload: &[u8],
    render: fn(&T) -> J,
) -> Result<(Vec<u8>, J), String> {
    let (value, consumed) = T::decode(payload).map_err(|e| format!("decode: {e}"))?;
    if consumed != payload.len() {
        return Err(format!(
            "payload has {} trailing bytes after the {consumed} the decoder consumed",
            payload.len() - consumed
        ));
    }
    Ok((value.to_bytes().to_vec(), render(&value)))
}

/// `decode-reply <code> <hex>`: decode a reply body the way the SDK does
/// (strip and check the result section where the operation is
/// result-framed, then the crate's response type, every byte consumed) and
/// answer the re-encoded body and the values, in `reply`'s JSON shape.
pub fn decode_reply(code: u32, body: &[u8]) -> Result<(Vec<u8>, J), String> {
    let mut section = Vec::new();
    let mut payload = body;
    if result_framed(code) && !(body.is_empty() && operation_for_code(code) == Operation::Register)
    {
        match result_code(body) {
            Some(0) => {
                let len = result_section_len(body).ok_or("malformed result section")?;
                section.extend_from_slice(&body[..len]);
                payload = &body[len..];
            }
            Some(result) => return Err(format!("rejected: result {result}")),
            None => return Err("malformed result section".to_string()),
        }
    }
    let (reencoded, json) = match code {
        40 | 45 | 15 => dec(payload, j_login_register),
        38 | 44 => dec(payload, j_identity),
        10 => dec(payload, j_stats),
        12 => dec(payload, j_cluster_metadata),
        20 | 21 => dec(payload, j_client_details),
        22 => dec(payload, j_clients),
        100 | 106 => {
            let json = poll_json(payload)?;
            Ok((payload.to_vec(), json))
        }
        101 => dec(payload, j_send_messages),
        105 => dec(payload, j_partition_route),
        107 => dec(payload, j_wait),
        120 => dec(payload, j_consumer_offset),
        200 => dec(payload, j_get_stream),
        201 => dec(payload, j_streams),
        202 => dec(payload, j_stream),
        300 | 302 => dec(payload, j_topic),
        301 => dec(payload, j_topics),
        600 => dec(payload, j_group_details),
        601 => dec(payload, j_groups),
        606 => dec(payload, j_sync),
        31 => dec(payload, j_user_details),
        32 => dec(payload, j_users),
        41 => dec(payload, j_tokens),
        42 => dec(payload, j_raw_token),
        c if is_empty_reply(c) => dec(payload, j_empty),
        _ => Err(format!("no reply decoder for command code {code}")),
    }?;
    section.extend_from_slice(&reencoded);
    Ok((section, json))
}

fn j_empty(_: &EmptyResponse) -> J {
    J::Obj(vec![])
}

fn j_login_register(v: &LoginRegisterResponse) -> J {
    J::Obj(vec![
        ("user_id", J::n(v.user_id)),
        ("session", J::s64(v.session)),
        ("server_protocol_version", J::n(v.server_protocol_version)),
        ("server_version", J::s(&v.server_version)),
    ])
}

fn j_identity(v: &IdentityResponse) -> J {
    J::Obj(vec![("user_id", J::n(v.user_id))])
}

fn j_cluster_metadata(v: &ClusterMetadataResponse) -> J {
    J::Obj(vec![
        ("name", J::s(&v.name)),
        (
            "nodes",
            J::arr(&v.nodes, |n| {
                J::Obj(vec![
                    ("replica_id", J::n(n.replica_id)),
                    ("name", J::s(&n.name)),
                    ("ip", J::s(&n.ip)),
                    ("tcp_port", J::n(n.tcp_port)),
                    ("quic_port", J::n(n.quic_port)),
                    ("http_port", J::n(n.http_port)),
                    ("websocket_port", J::n(n.websocket_port)),
                    ("role", J::n(n.role)),
                    ("status", J::n(n.status)),
                ])
            }),
        ),
    ])
}

fn j_clients(v: &GetClientsResponse) -> J {
    J::Obj(vec![("clients", J::arr(&v.clients, j_client))])
}

fn j_send_messages(v: &SendMessagesResponse) -> J {
    J::Obj(vec![(
        "confirmations",
        J::arr(&v.confirmations, |c| {
            J::Obj(vec![
                ("stream_id", J::n(c.stream_id)),
                ("topic_id", J::n(c.topic_id)),
                ("partition_id", J::n(c.partition_id)),
                ("base_offset", J::s64(c.base_offset)),
            ])
        }),
    )])
}

fn j_partition_route(v: &PartitionRouteResponse) -> J {
    J::Obj(vec![
        ("incarnation", J::s64(v.incarnation)),
        ("metadata_op", J::s64(v.metadata_op)),
        ("view", J::n(v.view)),
        ("partitions_count", J::n(v.partitions_count)),
        ("primary_replica", J::n(v.primary_replica)),
    ])
}

fn j_wait(v: &WaitForMessagesResponse) -> J {
    J::Obj(vec![("partitions", J::arr(&v.partitions, |p| J::n(*p)))])
}

fn j_consumer_offset(v: &ConsumerOffsetResponse) -> J {
    J::Obj(vec![
        ("partition_id", J::n(v.partition_id)),
        ("current_offset", J::s64(v.current_offset)),
        ("stored_offset", J::s64(v.stored_offset)),
    ])
}

fn j_get_stream(v: &GetStreamResponse) -> J {
    J::Obj(vec![
        ("stream", j_stream(&v.stream)),
        ("topics", J::arr(&v.topics, j_topic_header)),
    ])
}

fn j_streams(v: &GetStreamsResponse) -> J {
    J::Obj(vec![("streams", J::arr(&v.streams, j_stream))])
}

fn j_topic(v: &GetTopicResponse) -> J {
    J::Obj(vec![
        ("topic", j_topic_header(&v.topic)),
        ("partitions", J::arr(&v.partitions, j_partition)),
    ])
}

fn j_topics(v: &GetTopicsResponse) -> J {
    J::Obj(vec![("topics", J::arr(&v.topics, j_topic_header))])
}

fn j_group_details(v: &ConsumerGroupDetailsResponse) -> J {
    J::Obj(vec![
        ("group", j_group(&v.group)),
        (
            "members",
            J::arr(&v.members, |m| {
                J::Obj(vec![
                    ("id", J::n(m.id)),
                    ("partitions_count", J::n(m.partitions_count)),
                    ("partitions", J::arr(&m.partitions, |p| J::n(*p))),
                ])
            }),
        ),
    ])
}

fn j_groups(v: &GetConsumerGroupsResponse) -> J {
    J::Obj(vec![("groups", J::arr(&v.groups, j_group))])
}

fn j_sync(v: &SyncConsumerGroupResponse) -> J {
    J::Obj(vec![
        ("generation", J::s64(v.generation)),
        ("partitions", J::arr(&v.partitions, |p| J::n(*p))),
    ])
}

/// Permissions are not generated (always null); a decoded non-null block is
/// rendered as its Debug text.
fn j_user_details(v: &UserDetailsResponse) -> J {
    J::Obj(vec![
        ("user", j_user(&v.user)),
        (
            "permissions",
            J::opt(v.permissions.as_ref(), |p| J::Str(format!("{p:?}"))),
        ),
    ])
}

fn j_users(v: &GetUsersResponse) -> J {
    J::Obj(vec![("users", J::arr(&v.users, j_user))])
}

fn j_tokens(v: &GetPersonalAccessTokensResponse) -> J {
    J::Obj(vec![(
        "tokens",
        J::arr(&v.tokens, |t| {
            J::Obj(vec![
                ("name", J::s(&t.name)),
                ("expiry_at", J::s64(t.expiry_at)),
            ])
        }),
    )])
}

fn j_raw_token(v: &RawPersonalAccessTokenResponse) -> J {
    J::Obj(vec![("token", J::s(&v.token))])
}

fn stats(rng: &mut Rng) -> StatsResponse {
    StatsResponse {
        process_id: rng.u32(),
        cpu_usage: rng.f32(),
        total_cpu_usage: rng.f32(),
        memory_usage: rng.u64(),
        total_memory: rng.u64(),
        available_memory: rng.u64(),
        run_time: rng.u64(),
        start_time: rng.u64(),
        read_bytes: rng.u64(),
        written_bytes: rng.u64(),
        messages_size_bytes: rng.u64(),
        streams_count: rng.u32(),
        topics_count: rng.u32(),
        partitions_count: rng.u32(),
        segments_count: rng.u32(),
        messages_count: rng.u64(),
        clients_count: rng.u32(),
        consumer_groups_count: rng.u32(),
        hostname: rng.string(0, 30),
        os_name: rng.string(0, 20),
        os_version: rng.string(0, 40),
        kernel_version: rng.string(0, 40),
        iggy_server_version: rng.string(0, 20),
        // Zero on the wire means absent, so Some(0) cannot round-trip.
        iggy_server_semver: if rng.bool() {
            Some(1 + rng.below(u64::from(u32::MAX - 1)) as u32)
        } else {
            None
        },
        cache_metrics: (0..rng.count())
            .map(|_| CacheMetricEntry {
                stream_id: rng.u32(),
                topic_id: rng.u32(),
                partition_id: rng.u32(),
                hits: rng.u64(),
                misses: rng.u64(),
                hit_ratio: rng.f32(),
            })
            .collect(),
        threads_count: rng.u32(),
        free_disk_space: rng.u64(),
        total_disk_space: rng.u64(),
        open_files_count: rng.u64(),
        open_files_limit: rng.u64(),
    }
}

fn j_stats(v: &StatsResponse) -> J {
    J::Obj(vec![
        ("process_id", J::n(v.process_id)),
        ("cpu_usage", J::f(v.cpu_usage)),
        ("total_cpu_usage", J::f(v.total_cpu_usage)),
        ("memory_usage", J::s64(v.memory_usage)),
        ("total_memory", J::s64(v.total_memory)),
        ("available_memory", J::s64(v.available_memory)),
        ("run_time", J::s64(v.run_time)),
        ("start_time", J::s64(v.start_time)),
        ("read_bytes", J::s64(v.read_bytes)),
        ("written_bytes", J::s64(v.written_bytes)),
        ("messages_size_bytes", J::s64(v.messages_size_bytes)),
        ("streams_count", J::n(v.streams_count)),
        ("topics_count", J::n(v.topics_count)),
        ("partitions_count", J::n(v.partitions_count)),
        ("segments_count", J::n(v.segments_count)),
        ("messages_count", J::s64(v.messages_count)),
        ("clients_count", J::n(v.clients_count)),
        ("consumer_groups_count", J::n(v.consumer_groups_count)),
        ("hostname", J::s(&v.hostname)),
        ("os_name", J::s(&v.os_name)),
        ("os_version", J::s(&v.os_version)),
        ("kernel_version", J::s(&v.kernel_version)),
        ("iggy_server_version", J::s(&v.iggy_server_version)),
        ("iggy_server_semver", J::opt(v.iggy_server_semver, J::n)),
        (
            "cache_metrics",
            J::arr(&v.cache_metrics, |c| {
                J::Obj(vec![
                    ("stream_id", J::n(c.stream_id)),
                    ("topic_id", J::n(c.topic_id)),
                    ("partition_id", J::n(c.partition_id)),
                    ("hits", J::s64(c.hits)),
                    ("misses", J::s64(c.misses)),
                    ("hit_ratio", J::f(c.hit_ratio)),
                ])
            }),
        ),
        ("threads_count", J::n(v.threads_count)),
        ("free_disk_space", J::s64(v.free_disk_space)),
        ("total_disk_space", J::s64(v.total_disk_space)),
        ("open_files_count", J::s64(v.open_files_count)),
        ("open_files_limit", J::s64(v.open_files_limit)),
    ])
}

fn client(rng: &mut Rng, groups: u32) -> ClientResponse {
    ClientResponse {
        client_id: rng.u32(),
        user_id: rng.u32(),
        transport: rng.u8(),
        address: if rng.bool() {
            format!("127.0.0.1:{}", rng.u16())
        } else {
            rng.string(0, 60)
        },
        consumer_groups_count: groups,
    }
}

fn client_details(rng: &mut Rng) -> ClientDetailsResponse {
    let consumer_groups: Vec<ConsumerGroupInfoResponse> = (0..rng.count())
        .map(|_| ConsumerGroupInfoResponse {
            stream_id: rng.u32(),
            topic_id: rng.u32(),
            group_id: rng.u32(),
        })
        .collect();
    ClientDetailsResponse {
        client: client(rng, consumer_groups.len() as u32),
        consumer_groups,
    }
}

fn j_client(c: &ClientResponse) -> J {
    J::Obj(vec![
        ("client_id", J::n(c.client_id)),
        ("user_id", J::n(c.user_id)),
        ("transport", J::n(c.transport)),
        ("address", J::s(&c.address)),
        ("consumer_groups_count", J::n(c.consumer_groups_count)),
    ])
}

fn j_client_details(v: &ClientDetailsResponse) -> J {
    J::Obj(vec![
        ("client", j_client(&v.client)),
        (
            "consumer_groups",
            J::arr(&v.consumer_groups, |g| {
                J::Obj(vec![
                    ("stream_id", J::n(g.stream_id)),
                    ("topic_id", J::n(g.topic_id)),
                    ("group_id", J::n(g.group_id)),
                ])
            }),
        ),
    ])
}

fn stream(rng: &mut Rng, topics_count: Option<u32>) -> StreamResponse {
    StreamResponse {
        id: rng.u32(),
        created_at: rng.u64(),
        topics_count: topics_count.unwrap_or_else(|| rng.u32()),
        size_bytes: rng.u64(),
        messages_count: rng.u64(),
        name: rng.name(),
        options: rng.options(),
        derived_options: rng.options(),
    }
}

fn j_options(o: &WireOptions) -> J {
    J::hex(o.as_bytes())
}

fn j_stream(s: &StreamResponse) -> J {
    J::Obj(vec![
        ("id", J::n(s.id)),
        ("created_at", J::s64(s.created_at)),
        ("topics_count", J::n(s.topics_count)),
        ("size_bytes", J::s64(s.size_bytes)),
        ("messages_count", J::s64(s.messages_count)),
        ("name", J::s(&s.name)),
        ("options", j_options(&s.options)),
        ("derived_options", j_options(&s.derived_options)),
    ])
}

fn topic_header(rng: &mut Rng, partitions_count: Option<u32>) -> TopicHeader {
    TopicHeader {
        id: rng.u32(),
        created_at: rng.u64(),
        partitions_count: partitions_count.unwrap_or_else(|| rng.u32()),
        size_bytes: rng.u64(),
        messages_count: rng.u64(),
        name: rng.name(),
        options: rng.options(),
        derived_options: rng.options(),
    }
}

fn j_topic_header(t: &TopicHeader) -> J {
    J::Obj(vec![
        ("id", J::n(t.id)),
        ("created_at", J::s64(t.created_at)),
        ("partitions_count", J::n(t.partitions_count)),
        ("size_bytes", J::s64(t.size_bytes)),
        ("messages_count", J::s64(t.messages_count)),
        ("name", J::s(&t.name)),
        ("options", j_options(&t.options)),
        ("derived_options", j_options(&t.derived_options)),
    ])
}

fn context(rng: &mut Rng) -> PartitionContext {
    PartitionContext {
        incarnation: rng.u64(),
        owner_generation: rng.u64(),
        metadata_op: rng.u64(),
    }
}

fn j_context(c: &PartitionContext) -> J {
    J::Obj(vec![
        ("incarnation", J::s64(c.incarnation)),
        ("owner_generation", J::s64(c.owner_generation)),
        ("metadata_op", J::s64(c.metadata_op)),
    ])
}

fn topic(rng: &mut Rng) -> GetTopicResponse {
    let partitions: Vec<PartitionResponse> = (0..rng.count())
        .map(|_| PartitionResponse {
            id: rng.u32(),
            created_at: rng.u64(),
            segments_count: rng.u32(),
            current_offset: rng.u64(),
            size_bytes: rng.u64(),
            messages_count: rng.u64(),
            context: context(rng),
        })
        .collect();
    GetTopicResponse {
        topic: topic_header(rng, Some(partitions.len() as u32)),
        partitions,
    }
}

fn j_partition(p: &PartitionResponse) -> J {
    J::Obj(vec![
        ("id", J::n(p.id)),
        ("created_at", J::s64(p.created_at)),
        ("segments_count", J::n(p.segments_count)),
        ("current_offset", J::s64(p.current_offset)),
        ("size_bytes", J::s64(p.size_bytes)),
        ("messages_count", J::s64(p.messages_count)),
        ("context", j_context(&p.context)),
    ])
}

fn group(rng: &mut Rng, members_count: Option<u32>) -> ConsumerGroupResponse {
    ConsumerGroupResponse {
        id: rng.u32(),
        partitions_count: rng.u32(),
        members_count: members_count.unwrap_or_else(|| rng.u32()),
        name: rng.name(),
    }
}

fn j_group(g: &ConsumerGroupResponse) -> J {
    J::Obj(vec![
        ("id", J::n(g.id)),
        ("partitions_count", J::n(g.partitions_count)),
        ("members_count", J::n(g.members_count)),
        ("name", J::s(&g.name)),
    ])
}

fn user(rng: &mut Rng) -> UserResponse {
    UserResponse {
        id: rng.u32(),
        created_at: rng.u64(),
        status: rng.u8(),
        username: rng.name(),
        options: rng.options(),
        derived_options: rng.options(),
    }
}

fn j_user(u: &UserResponse) -> J {
    J::Obj(vec![
        ("id", J::n(u.id)),
        ("created_at", J::s64(u.created_at)),
        ("status", J::n(u.status)),
        ("username", J::s(&u.username)),
        ("options", j_options(&u.options)),
        ("derived_options", j_options(&u.derived_options)),
    ])
}

/// A poll reply: the 40-byte header, then 0..=2 stored batches. Batches are
/// built with the crate's `SendMessagesEncoder` (the producer record the
/// server stores) and stamped the way the server stores them: partition id,
/// base offset and base timestamp set, batch checksum recomputed. The values
/// printed are what the crate's `PollMessagesResponse` decoder reads back.
fn poll(rng: &mut Rng) -> Result<(Vec<u8>, J), String> {
    let partition_id = rng.u32();
    let mut next_offset = rng.below(1 << 40);
    let mut batches = Vec::new();
    let mut total: u32 = 0;
    let batch_count = rng.below(3);
    for _ in 0..batch_count {
        let n = rng.range(1, 4);
        let base_origin = rng.below(1 << 52);
        let owned: Vec<(u128, u64, Vec<u8>, Vec<u8>)> = (0..n)
            .map(|_| {
                (
                    rng.u128(),
                    base_origin + rng.below(1 << 20),
                    rng.user_headers(),
                    rng.bytes(0, 64),
                )
            })
            .collect();
        let raw: Vec<RawMessage<'_>> = owned
            .iter()
            .map(|(id, ts, headers, payload)| RawMessage {
                id: *id,
                origin_timestamp: *ts,
                headers: (!headers.is_empty()).then_some(headers.as_slice()),
                payload,
            })
            .collect();
        let mut buf = BytesMut::new();
        SendMessagesEncoder::encode(
            &mut buf,
            &WireIdentifier::numeric(1),
            &WireIdentifier::numeric(1),
            &WirePartitioning::Balanced,
            &raw,
        )
        .map_err(|e| format!("encode batch: {e}"))?;
        let metadata_length = u32::from_le_bytes(buf[..4].try_into().expect("4 bytes")) as usize;
        let mut batch = buf[4 + metadata_length..].to_vec();
        let mut header = BatchHeader::decode(&batch).map_err(|e| format!("batch header: {e}"))?;
        header.partition_id = u64::from(partition_id);
        header.base_offset = next_offset;
        header.base_timestamp = rng.below(1 << 52);
        header.batch_checksum = calculate_batch_checksum(&header, &batch[BATCH_HEADER_SIZE..]);
        header.encode_into(&mut batch[..BATCH_HEADER_SIZE]);
        batches.extend_from_slice(&batch);
        next_offset += n as u64;
        total += n as u32;
    }
    let header = PollMessagesResponseHeader {
        partition_id,
        current_offset: next_offset.saturating_sub(1) + rng.below(3),
        messages_count: total,
        context: context(rng),
    };
    let mut body = header.to_le_bytes().to_vec();
    body.extend_from_slice(&batches);

    let json = poll_json(&body)?;
    let (decoded, _) = PollMessagesResponseHeader::decode(&body).map_err(|e| format!("{e}"))?;
    if decoded != header {
        return Err("poll header does not round-trip".to_string());
    }
    Ok((body, json))
}

/// The values the crate's `PollMessagesResponse` decoder reads from `body`.
/// Every batch must tile its frames exactly and the header's
/// `messages_count` must equal the messages found.
fn poll_json(body: &[u8]) -> Result<J, String> {
    let decoded = PollMessagesResponse::decode(body).map_err(|e| format!("poll decode: {e}"))?;
    let header = decoded.header.clone();
    let mut messages = Vec::new();
    for view in decoded.messages {
        let m = view.map_err(|e| format!("poll batches: {e}"))?;
        messages.push(J::Obj(vec![
            ("checksum", J::s64(m.checksum)),
            ("id", J::s128(m.id)),
            ("offset", J::s64(m.offset)),
            ("timestamp", J::s64(m.timestamp)),
            ("origin_timestamp", J::s64(m.origin_timestamp)),
            ("payload", J::hex(m.payload)),
            ("user_headers", J::hex(m.user_headers)),
        ]));
    }
    if messages.len() != header.messages_count as usize {
        return Err(format!(
            "poll header says {} messages, the batches hold {}",
            header.messages_count,
            messages.len()
        ));
    }
    Ok(J::Obj(vec![
        ("partition_id", J::n(header.partition_id)),
        ("current_offset", J::s64(header.current_offset)),
        ("messages_count", J::n(header.messages_count)),
        ("context", j_context(&header.context)),
        ("messages", J::Arr(messages)),
    ]))
}

/// `reply-header <code> <seed>`: the `ReplyHeader` the server sends for
/// `code`'s operation. Replicated operations (everything but NonReplicated)
/// are answered from the committed prepare (`ReplyHeader::from_prepare`:
/// `commit = op`, committed-result byte set); non-replicated reads from
/// `ReplyHeader::echoing` (`op`, `commit` zero, no committed-result byte).
/// `size` is 256 plus the length of `reply <code> <seed>`'s body when there
/// is one, so the two commands together give a whole frame.
pub fn reply_header(code: u32, seed: u64) -> Result<(Vec<u8>, J), String> {
    if lookup_command(code).is_none() {
        return Err(format!("command code {code} is not in the dispatch table"));
    }
    let body_len = reply(code, seed).map_or(0, |(body, _)| body.len());
    let size = u32::try_from(HEADER_SIZE + body_len).map_err(|_| "reply too large".to_string())?;
    // A separate stream, so the header's values do not shift the body's.
    let mut rng = Rng::new(seed ^ 0x5EED_0F0E_ADE2_0000);
    let operation = operation_for_code(code);
    let cluster = rng.u128();
    let view = rng.u32();
    let replica = rng.below(3) as u8;
    let timestamp = rng.u64();
    let client = rng.u128_nonzero();
    let request = if operation == Operation::Register {
        0
    } else {
        1 + rng.below(u64::MAX - 1)
    };
    let stampless = operation.is_partition() || operation == Operation::NonReplicated;
    let request_checksum = if stampless { 0 } else { rng.u128_nonzero() };
    let partition_incarnation = if operation.is_partition() || matches!(code, 100 | 106) {
        rng.u64()
    } else {
        0
    };
    let header = if operation == Operation::NonReplicated {
        let req = RoutedRequestHeader {
            cluster,
            view,
            replica,
            command: Command::Request,
            client,
            request_checksum,
            timestamp,
            request,
            operation,
            reserved: code.to_le_bytes(),
            partition_incarnation,
            ..RoutedRequestHeader::default()
        };
        let mut h = ReplyHeader::echoing(&req, size);
        h.client = client;
        h
    } else {
        let prepare = PrepareHeader {
            cluster,
            view,
            replica,
            command: Command::Prepare,
            client,
            request_checksum,
            op: 1 + rng.below(1 << 48),
            timestamp,
            request,
            operation,
            partition_incarnation,
            ..PrepareHeader::default()
        };
        ReplyHeader::from_prepare(&prepare, size)
    };
    header
        .validate()
        .map_err(|e| format!("reply header validate: {e}"))?;
    let bytes = bytemuck::bytes_of(&header).to_vec();
    let json = J::Obj(vec![
        ("checksum", J::s128(header.checksum)),
        ("checksum_body", J::s128(header.checksum_body)),
        ("cluster", J::s128(header.cluster)),
        ("size", J::n(header.size)),
        ("view", J::n(header.view)),
        ("release", J::n(header.release)),
        ("command", J::n(header.command as u8)),
        ("replica", J::n(header.replica)),
        ("request_checksum", J::s128(header.request_checksum)),
        ("context", J::s128(header.context)),
        ("client", J::s128(header.client)),
        ("op", J::s64(header.op)),
        ("commit", J::s64(header.commit)),
        ("timestamp", J::s64(header.timestamp)),
        ("request", J::s64(header.request)),
        ("operation", J::n(header.operation as u8)),
        ("status", J::n(header.status)),
        ("reserved", J::hex(&header.reserved)),
        (
            "partition_incarnation",
            J::s64(header.partition_incarnation),
        ),
        (
            "has_committed_result",
            J::Bool(header.has_committed_result()),
        ),
        ("result_framed", J::Bool(result_framed(code))),
    ]);
    Ok((bytes, json))
}

/// `eviction <reason> <max> <min> [client]`: an `EvictionHeader`.
/// IncompatibleProtocol (14) carries the window, every other reason zero.
pub fn eviction(reason: u8, max: u32, min: u32, client: u128) -> Result<Vec<u8>, String> {
    let reason: EvictionReason = bytemuck::checked::try_cast(reason)
        .map_err(|_| format!("{reason} is not an EvictionReason"))?;
    let header = if reason == EvictionReason::IncompatibleProtocol {
        EvictionHeader::incompatible_protocol(0, 0, 0, client, max, min)
    } else {
        if max != 0 || min != 0 {
            return Err(format!(
                "only IncompatibleProtocol carries a protocol window, {reason:?} must have 0 0"
            ));
        }
        EvictionHeader::new(0, 0, 0, client, reason)
    };
    header
        .validate()
        .map_err(|e| format!("eviction validate: {e}"))?;
    Ok(bytemuck::bytes_of(&header).to_vec())
}

/// `reject <result>`: the single-entry rejection section a result-framed
/// reply carries instead of a payload.
pub fn reject(result: u32) -> Vec<u8> {
    let mut section = [0u8; REJECTION_SECTION_LEN];
    write_rejection_section(&mut section, result);
    section.to_vec()
}
