/**
 * The recency set (issue 16): statements a user makes and later replaces — changed facts, moved
 * plans, corrected preferences — in English and Chinese, written for this project (no public
 * source). Each pair has the older statement, the newer one that replaces it, and a question
 * whose answer is the newer one. `build.ts` places them in a few months of conversation with
 * unrelated small talk; `bench:retrieval` scores whether the newer statement outranks the older.
 *
 * Wording is deliberately mixed: in some pairs the older statement shares more words with the
 * question than the newer one, in others the newer one repeats the old value, so that a ranking
 * cannot win by lexical overlap alone.
 */

export interface RecencyPair {
  readonly id: string;
  readonly old: string;
  readonly new: string;
  readonly question: string;
  /** Days between the two statements. */
  readonly gapDays: number;
}

export const EN_PAIRS: readonly RecencyPair[] = [
  {
    id: 'colour',
    old: 'My favourite colour is blue.',
    new: "I've changed my mind, green is my favourite colour now.",
    question: 'What is my favourite colour?',
    gapDays: 40,
  },
  {
    id: 'city',
    old: 'I live in Boston, close to the harbour.',
    new: 'We moved to Denver last week, so home is Colorado now.',
    question: 'Where do I live?',
    gapDays: 75,
  },
  {
    id: 'dentist',
    old: 'My dentist appointment is on March 3rd at 9 am.',
    new: 'The dentist office called and moved my appointment to March 10th.',
    question: 'When is my dentist appointment?',
    gapDays: 12,
  },
  {
    id: 'diet',
    old: "I'm vegetarian, I don't eat meat or fish.",
    new: "I started eating fish again, so I'm pescatarian these days.",
    question: 'What diet do I follow?',
    gapDays: 90,
  },
  {
    id: 'manager',
    old: 'My manager at work is Tom Becker.',
    new: 'Tom left the company; Priya Nair is my new manager.',
    question: 'Who is my manager?',
    gapDays: 60,
  },
  {
    id: 'deadline',
    old: 'The Atlas project deadline is June 30.',
    new: 'The client pushed the Atlas deadline back to July 15.',
    question: 'When is the Atlas project due?',
    gapDays: 20,
  },
  {
    id: 'car',
    old: 'I drive a grey Honda Civic.',
    new: 'I sold the Civic and bought a Tesla Model 3.',
    question: 'What car do I drive?',
    gapDays: 110,
  },
  {
    id: 'sport',
    old: 'I play tennis every Saturday morning.',
    new: 'I switched from tennis to badminton on Saturdays.',
    question: 'Which sport do I play on Saturdays?',
    gapDays: 35,
  },
  {
    id: 'school',
    old: 'My daughter goes to Lincoln Elementary.',
    new: 'My daughter transferred to Oak Park Elementary this term.',
    question: 'Which school does my daughter attend?',
    gapDays: 130,
  },
  {
    id: 'language',
    old: "I'm learning Spanish with an app every evening.",
    new: 'I dropped Spanish and started Japanese lessons instead.',
    question: 'Which language am I learning?',
    gapDays: 50,
  },
  {
    id: 'wedding',
    old: 'Our wedding is planned for September in Tuscany.',
    new: "We moved the wedding to May, and it'll be in Lisbon now.",
    question: 'When and where is our wedding?',
    gapDays: 45,
  },
  {
    id: 'seat',
    old: 'On flights I always book a window seat.',
    new: 'Because of my knee I now prefer aisle seats when I fly.',
    question: 'What seat do I prefer on flights?',
    gapDays: 70,
  },
  {
    id: 'gym',
    old: 'I work out at the Planet Fitness on Main Street.',
    new: 'I cancelled Planet Fitness and joined the YMCA downtown.',
    question: 'Which gym do I go to?',
    gapDays: 25,
  },
  {
    id: 'job',
    old: "I work as a nurse at St. Mary's hospital.",
    new: 'I left nursing and now work as a data analyst at a bank.',
    question: 'What is my job?',
    gapDays: 150,
  },
  {
    id: 'dogfood',
    old: 'Our dog Max eats Royal Canin kibble.',
    new: "The vet told us to switch Max to Hill's prescription food.",
    question: 'What food does my dog eat?',
    gapDays: 30,
  },
  {
    id: 'meeting',
    old: 'The team meeting is every Monday at 10.',
    new: 'Our weekly team meeting moved to Tuesdays at 2 pm.',
    question: 'When is the team meeting?',
    gapDays: 18,
  },
  {
    id: 'commute',
    old: 'I take the 7:15 train to work.',
    new: 'These days I ride the 8:05 bus to the office instead of the train.',
    question: 'How do I get to work?',
    gapDays: 55,
  },
  {
    id: 'restaurant',
    old: "My favourite restaurant is Luigi's on 5th Avenue.",
    new: "Luigi's closed, so Sakura Sushi is my favourite place to eat now.",
    question: "What's my favourite restaurant?",
    gapDays: 95,
  },
  {
    id: 'book',
    old: "I'm reading Dune at the moment.",
    new: 'I finished Dune and started reading Project Hail Mary.',
    question: 'What book am I reading?',
    gapDays: 28,
  },
  {
    id: 'sister',
    old: 'My sister Anna lives in London.',
    new: 'Anna just moved from London to Berlin for a new job.',
    question: 'Where does my sister live?',
    gapDays: 80,
  },
  {
    id: 'race',
    old: 'My goal this year is to run a half marathon.',
    new: 'I signed up for the full Chicago marathon instead of a half.',
    question: 'What race am I training for?',
    gapDays: 65,
  },
  {
    id: 'laptop',
    old: 'My work laptop is a ThinkPad X1.',
    new: 'IT replaced my ThinkPad with a MacBook Air.',
    question: 'What laptop do I use for work?',
    gapDays: 100,
  },
  {
    id: 'bedtime',
    old: 'I usually go to bed around midnight.',
    new: 'Lately I go to bed at 10 pm so I get more sleep.',
    question: 'What time do I go to bed?',
    gapDays: 42,
  },
  {
    id: 'anniversary',
    old: 'Our anniversary dinner is booked at Nobu.',
    new: 'We cancelled Nobu and booked the anniversary dinner at Le Bernardin.',
    question: 'Where is our anniversary dinner?',
    gapDays: 14,
  },
  {
    id: 'coffee',
    old: 'I take my coffee with milk and two sugars.',
    new: "I've cut out sugar, so it's just black coffee for me now.",
    question: 'How do I take my coffee?',
    gapDays: 120,
  },
];

export const ZH_PAIRS: readonly RecencyPair[] = [
  {
    id: 'colour',
    old: '我最喜欢的颜色是蓝色。',
    new: '我改主意了，现在最喜欢绿色。',
    question: '我最喜欢什么颜色？',
    gapDays: 40,
  },
  {
    id: 'city',
    old: '我住在杭州西湖边上。',
    new: '上周我们搬到成都了，现在家在四川。',
    question: '我住在哪里？',
    gapDays: 75,
  },
  {
    id: 'dentist',
    old: '我的牙医预约在三月三号上午九点。',
    new: '诊所打电话来，把我的牙医预约改到三月十号了。',
    question: '我的牙医预约是什么时候？',
    gapDays: 12,
  },
  {
    id: 'diet',
    old: '我是素食者，不吃肉也不吃鱼。',
    new: '我最近又开始吃鱼了，算是鱼素者。',
    question: '我现在的饮食习惯是什么？',
    gapDays: 90,
  },
  {
    id: 'manager',
    old: '我公司的领导是王强。',
    new: '王强离职了，现在我的新领导是李娜。',
    question: '我的领导是谁？',
    gapDays: 60,
  },
  {
    id: 'deadline',
    old: '星河项目的截止日期是六月三十号。',
    new: '客户把星河项目推迟到七月十五号交付。',
    question: '星河项目什么时候截止？',
    gapDays: 20,
  },
  {
    id: 'car',
    old: '我开的是一辆灰色的本田思域。',
    new: '我把思域卖了，换了一辆比亚迪汉。',
    question: '我开什么车？',
    gapDays: 110,
  },
  {
    id: 'sport',
    old: '我每周六早上打网球。',
    new: '周六我不打网球了，改打羽毛球。',
    question: '我周六做什么运动？',
    gapDays: 35,
  },
  {
    id: 'school',
    old: '我女儿在实验小学上学。',
    new: '这学期女儿转到了育才小学。',
    question: '我女儿在哪所学校上学？',
    gapDays: 130,
  },
  {
    id: 'language',
    old: '我每天晚上用软件学西班牙语。',
    new: '西班牙语我放弃了，改学日语了。',
    question: '我在学什么语言？',
    gapDays: 50,
  },
  {
    id: 'wedding',
    old: '我们的婚礼定在九月，在三亚办。',
    new: '婚礼改到五月了，地点换成了大理。',
    question: '我们的婚礼在什么时候、在哪里？',
    gapDays: 45,
  },
  {
    id: 'seat',
    old: '坐飞机我总是选靠窗的座位。',
    new: '因为膝盖不好，我现在坐飞机更喜欢靠过道的位置。',
    question: '我坐飞机喜欢什么座位？',
    gapDays: 70,
  },
  {
    id: 'gym',
    old: '我在家附近的一兆韦德健身房锻炼。',
    new: '我退了一兆韦德的卡，办了小区旁边游泳馆的年卡。',
    question: '我去哪里健身？',
    gapDays: 25,
  },
  {
    id: 'job',
    old: '我在市第一医院当护士。',
    new: '我不做护士了，现在在一家银行做数据分析。',
    question: '我是做什么工作的？',
    gapDays: 150,
  },
  {
    id: 'dogfood',
    old: '我家狗豆豆吃皇家狗粮。',
    new: '兽医让我们给豆豆换成希尔斯处方粮。',
    question: '我家的狗吃什么狗粮？',
    gapDays: 30,
  },
  {
    id: 'meeting',
    old: '团队例会是每周一上午十点。',
    new: '我们的周例会改到每周二下午两点了。',
    question: '团队例会是什么时候？',
    gapDays: 18,
  },
  {
    id: 'commute',
    old: '我每天坐七点一刻的地铁上班。',
    new: '最近我改坐八点零五分的公交去公司，不坐地铁了。',
    question: '我怎么去上班？',
    gapDays: 55,
  },
  {
    id: 'restaurant',
    old: '我最喜欢的餐厅是楼下那家川菜馆。',
    new: '川菜馆关门了，现在我最爱去的是街角的日料店。',
    question: '我最喜欢哪家餐厅？',
    gapDays: 95,
  },
  {
    id: 'book',
    old: '我最近在读《三体》。',
    new: '《三体》读完了，现在在读《活着》。',
    question: '我在读什么书？',
    gapDays: 28,
  },
  {
    id: 'sister',
    old: '我姐姐住在上海。',
    new: '姐姐为了新工作从上海搬到深圳了。',
    question: '我姐姐住在哪个城市？',
    gapDays: 80,
  },
  {
    id: 'race',
    old: '今年我的目标是跑一个半程马拉松。',
    new: '我报名了北京全程马拉松，不跑半马了。',
    question: '我在为什么比赛训练？',
    gapDays: 65,
  },
  {
    id: 'laptop',
    old: '我上班用的电脑是联想小新。',
    new: '公司把我的联想换成了一台华为笔记本。',
    question: '我上班用什么电脑？',
    gapDays: 100,
  },
  {
    id: 'bedtime',
    old: '我一般半夜十二点左右睡觉。',
    new: '最近我晚上十点就睡，想多睡一会儿。',
    question: '我几点睡觉？',
    gapDays: 42,
  },
  {
    id: 'anniversary',
    old: '结婚纪念日的晚餐订在了外滩的法餐厅。',
    new: '我们取消了法餐厅，纪念日晚餐改订在江边的粤菜馆。',
    question: '结婚纪念日晚餐在哪里吃？',
    gapDays: 14,
  },
  {
    id: 'coffee',
    old: '我喝咖啡要加奶加两块糖。',
    new: '我戒糖了，现在只喝黑咖啡。',
    question: '我喝咖啡怎么喝？',
    gapDays: 120,
  },
];

/** Unrelated small talk that fills the sessions around the statements. */
export const EN_FILLER: readonly string[] = [
  'The weather was lovely today, we had lunch outside.',
  'I watched a documentary about octopuses last night.',
  'Traffic on the highway was terrible this morning.',
  'We tried a new board game with friends, it was fun.',
  'My neighbour is renovating the kitchen, it is noisy.',
  'I finally cleaned out the garage over the weekend.',
  'Can you suggest a good podcast about history?',
  'The tomatoes in my garden are finally turning red.',
  'I spilled tea on my keyboard, luckily it still works.',
  'We went hiking and saw a family of deer.',
  'I need to remember to water the plants tomorrow.',
  'There was a great jazz band at the market on Sunday.',
];

export const ZH_FILLER: readonly string[] = [
  '今天天气很好，我们在外面吃的午饭。',
  '昨晚看了一部关于章鱼的纪录片。',
  '早上高架上堵车堵得厉害。',
  '周末和朋友玩了一个新的桌游，很有意思。',
  '邻居家在装修厨房，特别吵。',
  '周末终于把车库收拾干净了。',
  '能推荐一个讲历史的播客吗？',
  '院子里的西红柿终于红了。',
  '我把茶洒在键盘上了，还好还能用。',
  '我们去爬山，看到了一群小鹿。',
  '明天要记得给花浇水。',
  '周日集市上有个爵士乐队演得很好。',
];
