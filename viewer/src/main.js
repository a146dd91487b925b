// avatar-bridge live viewer: every open session of the bridge as a VRM avatar (three.js + @pixiv/three-vrm).
// The server (bridge/clients/viewer/server.py) sends JSON messages on /ws (docs/protocol.md section 9): hello,
// opened, frame, closed. Latest wins per session here too: a frame waits for the next render and is
// replaced by a newer one. window.__viewer exposes the scene state for tests and the benchmark.
import * as THREE from 'three';
import { GLTFLoader } from 'three/examples/jsm/loaders/GLTFLoader.js';
import { VRMLoaderPlugin, VRMUtils } from '@pixiv/three-vrm';
import { SPACING_M, wallNowMs, toVrmQuat, toVrmVec, arkitToExpression, restPose, humanoidBoneName } from './rig.js';

const canvas = document.getElementById('scene');
const hud = document.getElementById('hud');
const errorBox = document.getElementById('error');
// No MSAA: headless browsers render in software, where it costs most of the frame. A transparent
// canvas: the sky and the floor are the canvas's CSS background (see placeFloor), drawn once by the page.
const renderer = new THREE.WebGLRenderer({ canvas, antialias: false, alpha: true });
renderer.setPixelRatio(1);
renderer.setClearColor(0x000000, 0);
renderer.outputColorSpace = THREE.SRGBColorSpace;
const scene = new THREE.Scene();
const camera = new THREE.PerspectiveCamera(30, 1, 0.05, 100);
scene.add(new THREE.HemisphereLight(0xffffff, 0x445566, 1.6));
const sun = new THREE.DirectionalLight(0xffffff, 2.2);
sun.position.set(1.5, 3, 2.5);
scene.add(sun);
const FLOOR_RADIUS_M = 6;
const grid = new THREE.GridHelper(2 * FLOOR_RADIUS_M, 24, 0x8890a0, 0x6a7080);
scene.add(grid);
const farEdge = new THREE.Vector3();

// The floor as the canvas's background below the grid's far edge, not a mesh: a software renderer pays
// for every pixel a mesh covers, every frame (the floor mesh cost as much as four avatars), while the
// page's background is drawn once.
function placeFloor() {
  camera.updateMatrixWorld();
  const edge = farEdge.set(0, 0, -FLOOR_RADIUS_M).project(camera);
  const horizon = Math.min(100, Math.max(0, ((1 - edge.y) / 2) * 100)).toFixed(2);
  canvas.style.background = `linear-gradient(to bottom, #2a2f3a ${horizon}%, #4a505c ${horizon}%)`;
}

const state = {
  ready: false, connected: false, avatarUrl: null, avatarName: '', avatarError: null, errors: [],
  renders: 0, renderFps: 0, latencies: [], feedLatencies: [], sessions: {},
};
window.__viewer = state;
// The live objects, for tests that look deeper than the summary (not enumerated: JSON copies skip it).
Object.defineProperty(state, 'three', { value: { scene, camera, renderer, sessions: null }, enumerable: false });

let avatarBytes = null; // the VRM file, fetched once; each session parses its own copy
let defaultAvatarUrl = null;
let avatarIsDefault = false;
const sessions = new Map(); // id -> session record
state.three.sessions = sessions;
const loader = new GLTFLoader();
loader.register((parser) => new VRMLoaderPlugin(parser));

function showError(message, report = true) {
  state.errors.push(message);
  errorBox.textContent = message;
  errorBox.hidden = false;
  if (report && socket && socket.readyState === WebSocket.OPEN) {
    socket.send(JSON.stringify({ type: 'error', message: message.slice(0, 500) }));
  }
}

async function fetchAvatar(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.arrayBuffer();
}

async function parseVrm(bytes) {
  const gltf = await loader.parseAsync(bytes.slice(0), '');
  const vrm = gltf.userData.vrm;
  if (!vrm) throw new Error('three-vrm found no usable VRM in it (a VRMC_vrm or VRM extension with a humanoid)');
  if (!vrm.humanoid || !vrm.humanoid.getNormalizedBoneNode('hips')) throw new Error('the VRM has no humanoid hips bone');
  VRMUtils.removeUnnecessaryVertices(gltf.scene);
  VRMUtils.combineSkeletons(gltf.scene);
  if (vrm.meta && vrm.meta.metaVersion === '0') VRMUtils.rotateVRM0(vrm);
  vrm.scene.traverse((o) => { o.frustumCulled = false; });
  return vrm;
}

// The avatar file: the user's, falling back to the default one when it fails to load in the page.
async function loadAvatar(url, fallbackUrl) {
  try {
    avatarBytes = await fetchAvatar(url);
    const probe = await parseVrm(avatarBytes);
    disposeVrm(probe);
  } catch (err) {
    showError(`avatar ${url} cannot be shown: ${err.message || err}`);
    avatarBytes = null;
    if (fallbackUrl && fallbackUrl !== url) return loadAvatar(fallbackUrl, null);
    return;
  }
  state.avatarUrl = url;
  avatarIsDefault = url === defaultAvatarUrl;
  for (const record of sessions.values()) attachAvatar(record);
}

function disposeVrm(vrm) {
  VRMUtils.deepDispose(vrm.scene);
}

async function attachAvatar(record) {
  if (!avatarBytes || record.vrm || record.loading) return;
  record.loading = true;
  try {
    const vrm = await parseVrm(avatarBytes);
    if (record.closed) { disposeVrm(vrm); return; }
    record.vrm = vrm;
    if (avatarIsDefault) useDiffuseMaterials(vrm);
    record.rest = restPose(vrm);
    if (record.info.pipeline !== 'motion') relaxArms(vrm); // only a dance moves the body
    record.holder.add(vrm.scene);
    if (vrm.lookAt) vrm.lookAt.autoUpdate = false;
    record.expressions = expressionTable(vrm);
  } catch (err) {
    showError(`avatar cannot be built: ${err.message || err}`);
  } finally {
    record.loading = false;
  }
}

// The default avatar's clay in diffuse-only (Lambert) shading instead of glTF's physically based one: the
// same look for a matte figure at a fraction of the per-pixel work in a software renderer.
function useDiffuseMaterials(vrm) {
  vrm.scene.traverse((o) => {
    if (!o.isMesh || !o.material.isMeshStandardMaterial) return;
    const lambert = new THREE.MeshLambertMaterial({ color: o.material.color, vertexColors: o.material.vertexColors });
    o.material.dispose();
    o.material = lambert;
  });
}

// Arms down instead of the T-pose, for sessions that move only the face.
function relaxArms(vrm) {
  const flip = vrm.meta.metaVersion === '0';
  for (const [bone, angle] of [['leftUpperArm', -1.2], ['rightUpperArm', 1.2]]) {
    const node = vrm.humanoid.getNormalizedBoneNode(bone);
    const q = new THREE.Quaternion().setFromAxisAngle(new THREE.Vector3(0, 0, 1), angle);
    if (node) node.quaternion.copy(toVrmQuat([q.x, q.y, q.z, q.w], flip));
  }
}

function expressionTable(vrm) {
  const table = new Map();
  const manager = vrm.expressionManager;
  if (!manager) return table;
  for (const expression of manager.expressions) table.set(expression.expressionName.toLowerCase(), expression.expressionName);
  return table;
}

function addSession(message) {
  let record = sessions.get(message.session);
  if (record) { record.info = message; return; }
  const holder = new THREE.Group();
  scene.add(holder);
  record = {
    id: message.session, info: message, holder, vrm: null, rest: null, loading: false, closed: false,
    pending: null, frames: 0, applied: 0, lastSeq: -1, lost: 0, fpsWindow: [], latencyMs: null, origin: null,
  };
  sessions.set(message.session, record);
  layout();
  attachAvatar(record);
}

function removeSession(id) {
  const record = sessions.get(id);
  if (!record) return;
  record.closed = true;
  sessions.delete(id);
  delete state.sessions[id];
  scene.remove(record.holder);
  if (record.vrm) disposeVrm(record.vrm);
  layout();
}

function layout() {
  const ids = [...sessions.keys()];
  ids.forEach((id, i) => { sessions.get(id).holder.position.set((i - (ids.length - 1) / 2) * SPACING_M, 0, 0); });
  const facesOnly = ids.length > 0 && ids.every((id) => sessions.get(id).info.pipeline !== 'motion');
  const width = Math.max(1, ids.length) * SPACING_M;
  if (facesOnly) {
    const distance = Math.max(0.9, width * 1.0);
    camera.position.set(0, 1.6, distance);
    camera.lookAt(0, 1.55, 0);
  } else {
    const distance = Math.max(4.5, width * 1.7);
    camera.position.set(0, 1.3, distance);
    camera.lookAt(0, 0.85, 0);
  }
  placeFloor();
}

function applyFace(record, frame) {
  const vrm = record.vrm;
  const flip = vrm.meta.metaVersion === '0';
  const head = vrm.humanoid.getNormalizedBoneNode('head');
  if (head && frame.head) head.quaternion.copy(toVrmQuat(frame.head, flip));
  const manager = vrm.expressionManager;
  const names = record.info.blendshapes || [];
  const hasGaze = frame.gaze && frame.gaze.length === 4 && vrm.lookAt;
  if (hasGaze) {
    vrm.lookAt.yaw = THREE.MathUtils.RAD2DEG * (frame.gaze[0] + frame.gaze[2]) / 2;
    vrm.lookAt.pitch = -THREE.MathUtils.RAD2DEG * (frame.gaze[1] + frame.gaze[3]) / 2;
  }
  if (!manager) return;
  const weights = {};
  names.forEach((name, i) => { weights[name] = frame.blendshapes ? frame.blendshapes[i] || 0 : 0; });
  for (const [expression, value] of arkitToExpression(weights, frame.vowels, record.expressions, hasGaze)) {
    manager.setValue(expression, value);
  }
}

function applyMotion(record, frame) {
  const vrm = record.vrm;
  const flip = vrm.meta.metaVersion === '0';
  const info = record.info;
  const carry = [];
  for (let j = 0; j < info.joints.length; j++) {
    const q = new THREE.Quaternion(frame.joints[4 * j], frame.joints[4 * j + 1], frame.joints[4 * j + 2], frame.joints[4 * j + 3]);
    const parent = info.parents[j];
    if (parent >= 0) q.premultiply(carry[parent]);
    const bone = humanoidBoneName(info.humanoid[j]) && vrm.humanoid.getNormalizedBoneNode(humanoidBoneName(info.humanoid[j]));
    if (bone) {
      bone.quaternion.copy(toVrmQuat([q.x, q.y, q.z, q.w], flip));
      carry[j] = new THREE.Quaternion();
    } else {
      carry[j] = q; // a joint the avatar lacks hands its rotation on to the next bone below it
    }
  }
  // The pelvis, scaled from the rig's leg length to the avatar's, with the lowest rest contact on the floor.
  const rest = record.rest;
  const pelvis = [frame.root[0] + info.rest_offsets[0], frame.root[1] + info.rest_offsets[1], frame.root[2] + info.rest_offsets[2]];
  if (!record.origin) record.origin = [pelvis[0], pelvis[2]];
  const scale = (rest.hipsY - rest.contactY) / (info.rest_pelvis_y - info.floor_y);
  const local = [(pelvis[0] - record.origin[0]) * scale, rest.contactY + (pelvis[1] - info.floor_y) * scale, (pelvis[2] - record.origin[1]) * scale];
  const hips = vrm.humanoid.getNormalizedBoneNode('hips');
  hips.position.copy(toVrmVec(local, flip));
}

const world = new THREE.Vector3();
const worldQ = new THREE.Quaternion();
function boneState(vrm, name) {
  const node = vrm.humanoid.getRawBoneNode(name);
  if (!node) return null;
  node.getWorldPosition(world);
  return [world.x, world.y, world.z];
}

function publishState(record, now) {
  const vrm = record.vrm;
  const entry = {
    pipeline: record.info.pipeline, model: record.info.model, loaded: !!vrm, frames: record.frames,
    applied: record.applied, seq: record.lastSeq, lost: record.lost,
    fps: record.fpsWindow.length > 1 ? (record.fpsWindow.length - 1) * 1000 / (record.fpsWindow[record.fpsWindow.length - 1] - record.fpsWindow[0]) : 0,
    latencyMs: record.latencyMs, slotX: record.holder.position.x,
  };
  if (vrm) {
    const head = vrm.humanoid.getRawBoneNode('head');
    head.getWorldQuaternion(worldQ).multiply(record.rest.headRestInverse); // the turn from its rest pose
    entry.head = boneState(vrm, 'head');
    entry.headQuaternion = [worldQ.x, worldQ.y, worldQ.z, worldQ.w];
    for (const name of ['hips', 'leftFoot', 'rightFoot', 'leftToes', 'rightToes', 'leftHand', 'rightHand']) entry[name] = boneState(vrm, name);
    entry.restContactY = record.rest.contactY;
    const manager = vrm.expressionManager;
    if (manager) {
      entry.expressions = {};
      for (const expression of manager.expressions) {
        if (expression.weight > 0) entry.expressions[expression.expressionName] = expression.weight;
      }
    }
  }
  state.sessions[record.id] = entry;
  return now;
}

function updateHud() {
  const rows = [];
  for (const record of sessions.values()) {
    const e = state.sessions[record.id] || {};
    const latency = record.latencyMs == null ? '–' : `${record.latencyMs.toFixed(1)} ms`;
    rows.push(`${record.info.pipeline.padEnd(6)} ${record.id.slice(0, 8)}  ${(e.fps || 0).toFixed(1).padStart(5)} fps  latency ${latency}`);
  }
  const head = `avatar-bridge viewer · ${state.renderFps.toFixed(0)} fps · ${sessions.size} session${sessions.size === 1 ? '' : 's'}`;
  hud.textContent = [head, ...rows].join('\n');
}

let lastTick = performance.now();
const renderTimes = [];
let hudAt = 0;
function tick() {
  requestAnimationFrame(tick);
  const started = performance.now();
  const dt = Math.min((started - lastTick) / 1000, 0.1);
  lastTick = started;
  const shown = [];
  for (const record of sessions.values()) {
    const frame = record.pending;
    if (!record.vrm || !frame) continue;
    record.pending = null;
    if (frame.pipeline === 'motion') applyMotion(record, frame); else applyFace(record, frame);
    record.applied += 1;
    shown.push([record, frame]);
  }
  for (const record of sessions.values()) if (record.vrm) record.vrm.update(dt);
  resize();
  renderer.render(scene, camera);
  const now = wallNowMs();
  for (const [record, frame] of shown) {
    const latency = now - frame.t_publish_ms;
    record.latencyMs = record.latencyMs == null ? latency : record.latencyMs * 0.9 + latency * 0.1;
    if (state.latencies.length < 100000) {
      state.latencies.push(latency);
      state.feedLatencies.push(frame.received_ms - frame.t_publish_ms); // the part before the page had it
    }
  }
  const t = performance.now();
  renderTimes.push(t);
  while (renderTimes.length && renderTimes[0] < t - 1000) renderTimes.shift();
  state.renders += 1;
  state.renderFps = renderTimes.length;
  for (const record of sessions.values()) publishState(record, now);
  if (t - hudAt > 250) { hudAt = t; updateHud(); }
}

function resize() {
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== w || canvas.height !== h) {
    renderer.setSize(w, h, false);
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
    placeFloor();
  }
}

let socket = null;
function onMessage(event) {
  const message = JSON.parse(event.data);
  message.received_ms = wallNowMs();
  switch (message.type) {
    case 'hello': {
      state.avatarName = message.avatar.name;
      if (message.avatar.error) showError(`avatar: ${message.avatar.error}`, false);
      defaultAvatarUrl = message.avatar.default_url;
      if (!avatarBytes) loadAvatar(message.avatar.url, defaultAvatarUrl);
      for (const opened of message.sessions) addSession(opened);
      state.ready = true;
      break;
    }
    case 'opened': addSession(message); break;
    case 'closed': removeSession(message.session); break;
    case 'frame': {
      let record = sessions.get(message.session);
      if (!record) break; // the server sends 'opened' before a session's first frame
      record.frames += 1;
      if (record.lastSeq >= 0 && message.seq > record.lastSeq + 1) record.lost += message.seq - record.lastSeq - 1;
      record.lastSeq = message.seq;
      record.pending = message;
      const t = performance.now();
      record.fpsWindow.push(t);
      while (record.fpsWindow.length && record.fpsWindow[0] < t - 1000) record.fpsWindow.shift();
      break;
    }
    default: break; // later versions may add message types
  }
}

function connect() {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  socket = new WebSocket(`${scheme}://${location.host}/ws`);
  socket.onopen = () => { state.connected = true; };
  socket.onmessage = onMessage;
  socket.onclose = () => {
    state.connected = false;
    for (const id of [...sessions.keys()]) removeSession(id);
    setTimeout(connect, 1000);
  };
}

connect();
requestAnimationFrame(tick);
