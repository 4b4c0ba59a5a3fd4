/**
 * Hand-written two-topic conversations for the offline topic-shift detector: five English and four
 * Chinese topics of four user/assistant rounds each (8 messages). Joining two different topics of
 * one language gives a 16-message tail with one clear shift, after its 8th message. Used by
 * `topic-shift.int.spec.ts` and the clear-switch check of `bench/topic-shift.ts`.
 */
import type { JudgedMessage } from '../src/domain/boundary-judgement.js';

/** English topics. */
export const en: Record<string, readonly string[]> = {
  baking: [
    'How long should I knead bread dough by hand?',
    'About ten minutes, until the dough is smooth and springs back when you press it.',
    'Should I let it rise in the fridge or on the counter?',
    'On the counter it doubles in one to two hours; in the fridge overnight for more flavour.',
    'What oven temperature works for a crusty loaf?',
    'Bake at 230 °C with a tray of water for steam for the first fifteen minutes.',
    'How do I know the bread is done?',
    'Tap the bottom: it should sound hollow, and the inside should reach about 95 °C.',
  ],
  brakes: [
    'My car makes a grinding noise when I brake. What could it be?',
    'Most likely the brake pads are worn down to the metal and are scraping the rotors.',
    'Can I replace the brake pads myself?',
    'Yes, with a jack, axle stands and a socket set: remove the wheel, the caliper bolts, then the pads.',
    'Do I need to replace the rotors too?',
    'If they are scored or below the minimum thickness stamped on them, replace them as a pair.',
    'How do I bleed the brakes afterwards?',
    'Open the bleeder screw on each caliper, farthest from the master cylinder first, while someone presses the pedal.',
  ],
  tomatoes: [
    'When should I plant tomato seedlings outside?',
    'After the last frost, once night temperatures stay above 10 °C.',
    'How often should I water them?',
    'Deeply two or three times a week, at the base, rather than a little every day.',
    'The lower leaves are turning yellow. Is that a problem?',
    'Often it is early blight or a lack of nitrogen; remove the affected leaves and feed the plants.',
    'Do tomatoes need support?',
    'Yes, tie indeterminate varieties to stakes or cages as they grow.',
  ],
  python: [
    'My Python script fails with "ModuleNotFoundError: No module named requests".',
    'The package is not installed in the interpreter you run; install it with pip install requests.',
    'I installed it but the error stays.',
    'You probably have two Pythons: run python -m pip install requests with the same python you use to start the script.',
    'Should I use a virtual environment?',
    'Yes: python -m venv .venv, activate it, and install your packages there so projects do not conflict.',
    'How do I save the list of packages?',
    'Run pip freeze > requirements.txt and install them elsewhere with pip install -r requirements.txt.',
  ],
  japan: [
    'I am planning two weeks in Japan in April. Is that a good time?',
    'Yes, it is cherry blossom season, but book hotels early because it is the busiest time of the year.',
    'Is the Japan Rail Pass worth it?',
    'Since the 2023 price rise it only pays off if you take several long Shinkansen trips.',
    'How do I get from Narita airport to Tokyo?',
    'The Narita Express or the Keisei Skyliner take about an hour to central Tokyo.',
    'Do I need cash?',
    'Carry some yen: many small restaurants and temples still do not take cards.',
  ],
};
/** Chinese topics. */
export const zh: Record<string, readonly string[]> = {
  烹饪: [
    '做红烧肉的时候，五花肉需要先焯水吗？',
    '需要，冷水下锅焯水，可以去掉血沫和腥味，再捞出洗净。',
    '炒糖色用冰糖还是白糖比较好？',
    '冰糖更好，颜色红亮，小火慢慢炒到枣红色再下肉。',
    '炖的时候要加多少水？',
    '加开水没过肉，小火炖一个小时左右，最后大火收汁。',
    '可以放土豆或者鸡蛋一起炖吗？',
    '可以，土豆在最后二十分钟放，鸡蛋煮熟剥壳后一起炖更入味。',
  ],
  修车: [
    '我的汽车发动机故障灯亮了，还能继续开吗？',
    '如果灯是常亮的，可以低速开到修理厂；如果在闪烁，最好马上停车检查。',
    '有可能是什么原因导致的？',
    '常见原因有氧传感器故障、火花塞老化、点火线圈损坏或者油箱盖没拧紧。',
    '火花塞多久需要更换一次？',
    '普通镍合金火花塞大约两万公里，铱金火花塞可以用到六到八万公里。',
    '我自己能用读码器查故障码吗？',
    '可以，把OBD读码器插到方向盘下方的接口，打开点火开关就能读取故障码。',
  ],
  旅行: [
    '国庆节想去云南玩一周，怎么安排比较好？',
    '可以昆明进、丽江出：昆明一天，大理两天，丽江两天，再去香格里拉两天。',
    '大理住古城还是洱海边？',
    '想方便吃逛就住古城，想看日出和安静一点就住洱海边的双廊。',
    '去香格里拉会有高原反应吗？',
    '海拔三千多米，有可能轻微头痛，慢慢走、多喝水，不要剧烈运动。',
    '需要提前买门票吗？',
    '玉龙雪山的索道票要提前在官方平台预约，节假日很快就卖完。',
  ],
  英语: [
    '我想提高英语听力，有什么好方法？',
    '每天精听十五分钟，先不看字幕听三遍，再对照原文找出没听懂的地方。',
    '用什么材料比较合适？',
    '初学可以用慢速英语新闻，有基础后换成TED演讲或者播客。',
    '背单词有没有效率高一点的办法？',
    '用间隔重复的软件，比如Anki，每天复习到期的卡片，比一次背很多更有效。',
    '口语没人练怎么办？',
    '可以跟读影子练习，也可以找语伴在线交流，每周至少练两三次。',
  ],
};

/** Alternating user/assistant turns, sequences from `first`. */
export function conversation(turns: readonly string[], first = 1): JudgedMessage[] {
  return turns.map((content, i) => ({
    sequence: first + i,
    role: i % 2 === 0 ? 'USER' : 'ASSISTANT',
    content,
  }));
}

/** Every ordered pair of different topics of `topics`, as one conversation (the shift after message 8). */
export function topicPairs(
  topics: Record<string, readonly string[]>,
): { name: string; messages: JudgedMessage[] }[] {
  const names = Object.keys(topics);
  return names.flatMap((a) =>
    names
      .filter((b) => b !== a)
      .map((b) => ({
        name: `${a} → ${b}`,
        messages: conversation([...(topics[a] ?? []), ...(topics[b] ?? [])]),
      })),
  );
}
