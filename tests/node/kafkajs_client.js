// kafkajs_client.js drives kafkajs for kiggy's ecosystem tests
// (tests/ecosystem, which runs it and checks what it did with franz-go).
// Every command prints one JSON object on stdout; see tests/python/README.md
// for the commands, shared with the Python clients.
//
//   node kafkajs_client.js BOOTSTRAP COMMAND ARGS...
//
// kafkajs does gzip itself; snappy comes from kafkajs-snappy, lz4 from
// kafkajs-lz4, and zstd from a small codec of ours over zstd-napi (the
// @kafkajs/zstd package does not build here).
'use strict'

const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const LZ4Codec = require('kafkajs-lz4')
const zstd = require('zstd-napi')

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  async compress (encoder) { return zstd.compress(encoder.buffer) },
  async decompress (buffer) { return zstd.decompress(buffer) }
})

const CODECS = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD
}

const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')
const valueOf = (codec, i) => Buffer.from(`${codec} value ${i} `.repeat(12))
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function client (bootstrap) {
  return new Kafka({ clientId: 'kiggy-ecosystem', brokers: [bootstrap], logLevel: logLevel.WARN, retry: { retries: 8 } })
}

async function version () {
  out({ client: 'kafkajs', version: require('kafkajs/package.json').version })
}

// whileUnknown retries fn while it fails with UNKNOWN_TOPIC_OR_PARTITION: a
// new topic can take a moment to reach every broker's metadata cache.
async function whileUnknown (fn) {
  for (let i = 0; ; i++) {
    try {
      return await fn()
    } catch (err) {
      if (i >= 50 || err.type !== 'UNKNOWN_TOPIC_OR_PARTITION') throw err
      await sleep(100)
    }
  }
}

async function admin (bootstrap, keep, drop) {
  const a = client(bootstrap).admin()
  await a.connect()
  try {
    await a.createTopics({
      waitForLeaders: true,
      topics: [
        { topic: keep, numPartitions: 3, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '3600000' }] },
        { topic: drop, numPartitions: 1, replicationFactor: 1 }
      ]
    })
    const md = await whileUnknown(() => a.fetchTopicMetadata({ topics: [keep] }))
    const parts = md.topics[0].partitions.length
    const cfg = await whileUnknown(() => a.describeConfigs({ includeSynonyms: false, resources: [{ type: 2 /* TOPIC */, name: keep }] }))
    const entry = cfg.resources[0].configEntries.find((e) => e.configName === 'retention.ms')
    await a.deleteTopics({ topics: [drop] })
    let gone = false
    for (let i = 0; i < 100 && !gone; i++) {
      gone = !(await a.listTopics()).includes(drop)
      if (!gone) await sleep(100)
    }
    const listed = (await a.listTopics()).includes(keep)
    out({ partitions: parts, 'retention.ms': entry ? entry.configValue : null, deleted: gone, listed })
  } finally {
    await a.disconnect()
  }
}

async function produce (bootstrap, topic, n) {
  n = Number(n)
  const sent = {}
  const p = client(bootstrap).producer({ idempotent: true, maxInFlightRequests: 1 })
  await p.connect()
  try {
    let part = 0
    for (const [codec, type] of Object.entries(CODECS)) {
      const messages = []
      for (let i = 0; i < n; i++) {
        messages.push({
          key: `${codec}-key-${i}`,
          value: valueOf(codec, i),
          partition: part,
          headers: { codec, i: String(i) }
        })
      }
      await p.send({ topic, compression: type, acks: -1, messages })
      sent[codec] = n
      part++
    }
  } finally {
    await p.disconnect()
  }
  out({ sent })
}

async function consume (bootstrap, topic, group, n, protocol = 'classic') {
  if (protocol !== 'classic') throw new Error('kafkajs has only the classic group protocol')
  n = Number(n)
  const c = client(bootstrap).consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 1000, maxWaitTimeInMs: 500 })
  await c.connect()
  const got = []
  let done
  const finished = new Promise((resolve) => { done = resolve })
  await c.subscribe({ topic, fromBeginning: true })
  await c.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, isRunning }) => {
      for (const m of batch.messages) {
        if (got.length >= n || !isRunning()) break
        got.push(`${batch.partition}/${m.offset}/${m.key.toString()}`)
        resolveOffset(m.offset)
        // Commit exactly what was handled (the batch may hold more).
        await c.commitOffsets([{ topic, partition: batch.partition, offset: String(Number(m.offset) + 1) }])
      }
      if (got.length >= n) done()
    }
  })
  await Promise.race([finished, sleep(1000 * Number(process.env.KIGGY_CONSUME_SECONDS || 45))])
  await c.disconnect()
  out({ records: got })
}

async function main () {
  const [bootstrap, cmd, ...args] = process.argv.slice(2)
  const fn = { version, admin, produce, consume }[cmd]
  if (!fn) throw new Error(`unknown command ${cmd}`)
  await fn(bootstrap, ...args)
}

main().then(() => process.exit(0), (err) => {
  console.error(err && err.stack ? err.stack : err)
  process.exit(1)
})
