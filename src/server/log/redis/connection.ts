import type { Cluster, ClusterNode, ClusterOptions, Redis } from 'ioredis';
import { LifelineError } from '../../../errors.js';
import type { Script } from './scripts.js';

/** A standalone (or Sentinel) ioredis client, or an ioredis Cluster. */
export type RedisClient = Redis | Cluster;

/** How the log reaches Redis: exactly one of the three. */
export interface ConnectionOptions {
  client?: RedisClient | undefined;
  url?: string | undefined;
  cluster?: { nodes: ClusterNode[]; options?: ClusterOptions } | undefined;
}

/** The log's command connection, opened lazily when the log built it. */
export interface Connection {
  /** True on Redis Cluster: scripts publish wake-ups and followers subscribe per shard. */
  readonly isCluster: boolean;
  /** The client; rejects once closed, or when ioredis is missing. */
  client(): Promise<RedisClient>;
  /** The client when it is built and open, without a wait: the hot paths skip `client()`'s promise; undefined means ask `client()`. */
  clientNow(): RedisClient | undefined;
  /** Runs `script` with EVALSHA, falling back to EVAL when the node does not know it yet. */
  run(script: Script, keys: string[], args: (string | number)[]): Promise<unknown>;
  /**
   * Calls `listener` at every sign that the client lost a connection or the cluster
   * changed (a reconnect, a node gone or added): writes acknowledged before may be gone
   * after a failover. Registered once the client exists; removed by `close`.
   */
  onReset(listener: () => void): void;
  /** Marks the connection closed; quits the client when the log opened it. */
  close(): Promise<void>;
}

/** The events of an ioredis Redis or Cluster that say a connection was lost or the topology moved. */
const RESET_EVENTS = ['close', 'reconnecting', '-node', '+node'];

const CLUSTER_URL = /^(rediss?)-cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?$/;

/** `redis-cluster://[user:password@]host:port,host:port` into ioredis Cluster arguments. */
export function parseClusterUrl(url: string): { nodes: ClusterNode[]; options: ClusterOptions } {
  const match = CLUSTER_URL.exec(url);
  if (!match) {
    throw new LifelineError('invalid_argument', `A cluster URL looks like redis-cluster://host:port,host:port; got ${JSON.stringify(url)}.`);
  }
  const [, scheme, userinfo, hosts] = match;
  const nodes = (hosts as string).split(',').map((node) => {
    const found = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(node.trim());
    if (!found) throw new LifelineError('invalid_argument', `Cluster node ${JSON.stringify(node)} is not host:port.`);
    return { host: (found[1] as string).replace(/^\[|\]$/g, ''), port: Number(found[2]) };
  });
  const redisOptions: NonNullable<ClusterOptions['redisOptions']> = {};
  if (userinfo !== undefined && userinfo !== '') {
    const [username, password] = userinfo.split(':').map(decodeURIComponent);
    if (password === undefined) redisOptions.password = username as string;
    else {
      if (username) redisOptions.username = username;
      redisOptions.password = password;
    }
  }
  if (scheme === 'rediss') redisOptions.tls = {};
  return { nodes, options: { redisOptions } };
}

function replyMappingOf(client: RedisClient): string | undefined {
  const options = client.options as { replyMapping?: string; redisOptions?: { replyMapping?: string } };
  return options.replyMapping ?? options.redisOptions?.replyMapping;
}

function isClusterClient(client: RedisClient): client is Cluster {
  return (client as { isCluster?: boolean }).isCluster === true;
}

/** Loaded only here, so `lifeline-chat/server` never needs ioredis installed. */
async function build(options: ConnectionOptions, onError: (error: unknown) => void): Promise<RedisClient> {
  const { Cluster, Redis } = await import('ioredis');
  const url = options.url;
  // ioredis types Cluster options by reply mapping; openConnection checked it is the default one.
  type Options = ConstructorParameters<typeof Cluster>[1];
  let client: RedisClient;
  if (options.cluster) client = new Cluster(options.cluster.nodes, options.cluster.options as Options);
  else if (url !== undefined && CLUSTER_URL.test(url)) {
    const parsed = parseClusterUrl(url);
    client = new Cluster(parsed.nodes, parsed.options as Options);
  } else client = new Redis(url as string);
  client.on('error', onError);
  return client;
}

/** EVALSHA, falling back to EVAL when the node does not know the script yet. */
function evalScript(redis: RedisClient, script: Script, keys: string[], args: (string | number)[]): Promise<unknown> {
  try {
    return redis.evalsha(script.sha, keys.length, ...keys, ...args).catch((error: unknown) => {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return redis.eval(script.source, keys.length, ...keys, ...args);
    });
  } catch (error) {
    // A rejection, as from the async function this was: callers chain `.catch` on it.
    return Promise.reject(error);
  }
}

export function openConnection(options: ConnectionOptions, onError: (error: unknown) => void): Connection {
  const given = [options.client, options.url, options.cluster].filter((option) => option !== undefined).length;
  if (given !== 1) throw new LifelineError('invalid_argument', 'createRedisTurnLog needs exactly one of `client`, `url` and `cluster`.');
  const owns = options.client === undefined;
  let isCluster: boolean;
  let pending: Promise<RedisClient>;
  const mapping = options.client ? replyMappingOf(options.client) : options.cluster?.options?.redisOptions?.replyMapping;
  if (mapping !== undefined && mapping !== 'legacy') {
    throw new LifelineError('invalid_argument', `createRedisTurnLog needs replyMapping 'legacy', got '${mapping}'.`);
  }
  if (options.client !== undefined) {
    isCluster = isClusterClient(options.client);
    pending = Promise.resolve(options.client);
  } else {
    if (options.url !== undefined && /^rediss?-cluster:/.test(options.url)) parseClusterUrl(options.url);
    isCluster = options.cluster !== undefined || CLUSTER_URL.test(options.url ?? '');
    pending = build(options, onError);
    // Surfaced by the first command; without this a missing ioredis would crash the process.
    pending.catch(() => undefined);
  }
  let closed = false;
  /** The client once built: the hot path (every append) takes it without awaiting a settled promise again. */
  let ready: RedisClient | undefined;
  pending.then(
    (redis) => void (ready = redis),
    () => undefined,
  );
  const resetListeners: (() => void)[] = [];

  async function client(): Promise<RedisClient> {
    if (closed) throw new Error('The Redis turn log is closed.');
    try {
      return await pending;
    } catch (cause) {
      throw new LifelineError('invalid_argument', 'createRedisTurnLog({ url }) needs the optional peer dependency ioredis: npm install ioredis.', {
        cause,
      });
    }
  }

  return {
    isCluster,
    client,
    clientNow: () => (closed ? undefined : ready),
    run(script, keys, args) {
      // Once built, the command goes out in this call: no async frame of its own per append.
      if (ready !== undefined && !closed) return evalScript(ready, script, keys, args);
      return client().then((redis) => evalScript(redis, script, keys, args));
    },
    onReset(listener) {
      resetListeners.push(listener);
      pending.then(
        (redis) => {
          if (closed) return;
          for (const event of RESET_EVENTS) redis.on(event, listener);
        },
        () => undefined,
      );
    },
    async close() {
      if (closed) return;
      closed = true;
      const redis = await pending.catch(() => undefined);
      for (const listener of resetListeners) for (const event of RESET_EVENTS) redis?.off(event, listener);
      if (!owns || !redis) return;
      // QUIT waits in the offline queue while Redis is away: give it a moment, then drop the socket.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const quit = redis.quit().then(
        () => true,
        () => false,
      );
      const quitted = await Promise.race([quit, new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 1000)))]);
      clearTimeout(timer);
      if (!quitted) redis.disconnect();
    },
  };
}
