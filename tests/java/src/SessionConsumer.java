import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * SessionConsumer reads a topic of many partitions with one KafkaConsumer
 * (assign, no group), whose fetcher uses incremental fetch sessions
 * (KIP-227) when the broker gives it one, while its assignment changes;
 * for kiggy's interop suite (tests/interop, TestJavaFetchSessions).
 *
 * <pre>java -cp DIR:tests/java/lib/* SessionConsumer BOOTSTRAP TOPIC PARTITIONS PER_PARTITION</pre>
 *
 * The topic holds PER_PARTITION records in each of its PARTITIONS
 * partitions. Phase "one" reads the first half from the start; phase "two"
 * adds the second half (from the start); phase "three" keeps only the last
 * quarter, produces one more record to every partition, and reads until it
 * has the kept partitions' new records, then polls two more seconds for
 * strays. Each record read is printed "REC phase partition offset value";
 * each phase ends with "PHASE phase count". Exit status 0 when every phase
 * got its records in time.
 */
public class SessionConsumer {
    public static void main(String[] args) throws Exception {
        String boot = args[0], topic = args[1];
        int n = Integer.parseInt(args[2]), per = Integer.parseInt(args[3]);
        Properties p = new Properties();
        p.put("bootstrap.servers", boot);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("fetch.max.wait.ms", "200");
        boolean ok;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.assign(partitions(topic, 0, n / 2));
            ok = read(c, "one", per * (n / 2), 0);
            c.assign(partitions(topic, 0, n));
            ok &= read(c, "two", per * (n - n / 2), 0);
            c.assign(partitions(topic, 3 * n / 4, n));
            Properties pp = new Properties();
            pp.put("bootstrap.servers", boot);
            pp.put("key.serializer", StringSerializer.class.getName());
            pp.put("value.serializer", StringSerializer.class.getName());
            try (KafkaProducer<String, String> pr = new KafkaProducer<>(pp)) {
                for (int i = 0; i < n; i++) {
                    pr.send(new ProducerRecord<>(topic, i, null, "late-" + i)).get();
                }
            }
            ok &= read(c, "three", n - 3 * n / 4, 2000);
        }
        System.out.flush();
        System.exit(ok ? 0 : 1);
    }

    static List<TopicPartition> partitions(String topic, int from, int to) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = from; i < to; i++) {
            tps.add(new TopicPartition(topic, i));
        }
        return tps;
    }

    /** read polls until want records came (60 s at most), then extraMs more. */
    static boolean read(KafkaConsumer<String, String> c, String phase, int want, long extraMs) {
        int got = 0;
        long deadline = System.currentTimeMillis() + 60_000;
        while (got < want && System.currentTimeMillis() < deadline) {
            got += print(c, phase);
        }
        long end = System.currentTimeMillis() + extraMs;
        while (System.currentTimeMillis() < end) {
            got += print(c, phase);
        }
        System.out.println("PHASE " + phase + " " + got);
        return got >= want;
    }

    static int print(KafkaConsumer<String, String> c, String phase) {
        int got = 0;
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
            System.out.println("REC " + phase + " " + r.partition() + " " + r.offset() + " " + r.value());
            got++;
        }
        return got;
    }
}
