import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import test from 'node:test';
import { freePorts, untilPortsFree } from './ports.ts';

test('untilPortsFree resolves only once the port can be listened on again', async () => {
  const [port] = (await freePorts(1)) as [number];
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
  let closed = false;
  setTimeout(() => holder.close(() => (closed = true)), 300);
  await untilPortsFree([port]);
  assert.ok(closed, 'it waited for the holder to let go of the port');
});

test('untilPortsFree fails with the port when it stays in use', async () => {
  const [port] = (await freePorts(1)) as [number];
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
  try {
    await assert.rejects(untilPortsFree([port], 200), new RegExp(`127.0.0.1:${port} to be free`));
  } finally {
    holder.close();
  }
});
