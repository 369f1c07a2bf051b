package kiggy.transactions;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * WordCountEOS is a Kafka Streams 4.x application for kiggy's transactions
 * suite (tests/transactions), compiled there with javac against
 * tests/java/lib: the ecosystem suite's word count
 * (tests/java/src/kiggy/ecosystem/WordCount.java) with
 * processing.guarantee=exactly_once_v2.
 *
 * <pre>java -cp DIR:tests/java/lib/* kiggy.transactions.WordCountEOS BOOTSTRAP INPUT OUTPUT APP_ID STATE_DIR</pre>
 *
 * It reads lines (String values) from INPUT, splits them into lower-case
 * words, re-keys each word by itself (through the repartition topic
 * APP_ID-words-repartition) and counts them in the RocksDB store "counts"
 * (changelog APP_ID-counts-changelog), writing every updated count to OUTPUT
 * (String key, Long value). The record cache is off, so each input word
 * produces one output record: under exactly-once, the committed counts of
 * one word on OUTPUT run 1, 2, 3, ... with no gap and no repeat, whatever
 * crashed in between. Every 100 ms the stream thread commits a transaction
 * holding its output, its changelog and repartition writes and its input
 * offsets; its consumers read with read_committed.
 *
 * It prints "state NEW->RUNNING" lines on stdout as the application's state
 * changes, and closes the application (committing) and exits 0 when stdin
 * ends or reads "quit"; it exits 2 if the application dies.
 */
public final class WordCountEOS {
    private WordCountEOS() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: WordCountEOS BOOTSTRAP INPUT OUTPUT APP_ID STATE_DIR");
            System.exit(64);
        }
        String bootstrap = args[0], input = args[1], output = args[2], appId = args[3], stateDir = args[4];

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "classic");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // A killed instance's membership ends 6 s after its last
        // heartbeat (the broker's minimum), so its restart is not kept
        // waiting long; its open transaction is fenced at once by the
        // restart, which has the same transactional.id (the process id is
        // kept in the state directory).
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);

        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter((k, w) -> !w.isEmpty())
            .map((k, w) -> KeyValue.pair(w, w))
            .groupByKey(Grouped.<String, String>as("words").withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch dead = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            synchronized (System.out) {
                System.out.println("state " + before + "->" + now);
                System.out.flush();
            }
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.PENDING_ERROR) {
                dead.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("WordCountEOS: stream thread died: " + e);
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();

        Thread stdin = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null && !line.trim().equals("quit")) {
                    // ignore anything else
                }
            } catch (Exception e) {
                // end of input all the same
            }
            dead.countDown();
        }, "stdin");
        stdin.setDaemon(true);
        stdin.start();

        dead.await();
        KafkaStreams.State at = streams.state();
        boolean closed = streams.close(Duration.ofSeconds(30));
        System.out.println("closed " + closed + " from " + at);
        System.out.flush();
        System.exit(at == KafkaStreams.State.ERROR || at == KafkaStreams.State.PENDING_ERROR || !closed ? 2 : 0);
    }
}
